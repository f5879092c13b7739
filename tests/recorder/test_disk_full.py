"""Issue 25 item 9: on a full disk (a 4 MiB tmpfs), a writer told "failed" never finds its record in the
cassette later, records nobody waited for are kept and retried, and writing resumes once space returns."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from mcpgw.cassette.store import CassetteStore, StoreWriteError


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_write_reported_failed_is_not_committed_later_and_writing_resumes(small_disk):
    store = CassetteStore(small_disk / "cassette")
    filler = small_disk / "filler"

    async def scenario() -> tuple[bool, bool]:
        await store.put("exchanges", b"before", {"n": 0}, wait=True)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)  # the rest of the disk, unbuffered
        try:
            while True:
                os.write(fd, b"\1" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        failed = False
        try:
            await store.put("exchanges", b"told-failed", {"blob": "x" * 200_000}, wait=True)
        except StoreWriteError:
            failed = True
        store.append("calls", {"tool": "logged-while-full"})  # nobody waits: held and retried
        filler.unlink()
        await store.put("exchanges", b"after", {"n": 2}, wait=True)  # space is back: this commits
        return failed, True

    failed, _ = asyncio.run(scenario())
    assert failed
    assert store.get("exchanges", b"after") == {"n": 2}
    assert store.get("exchanges", b"told-failed") is None
    assert [record["tool"] for _, record in store.items("calls")] == ["logged-while-full"]
    store.close()
