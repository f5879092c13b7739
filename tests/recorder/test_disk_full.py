"""Issue 25 item 9: on a full disk (a 4 MiB tmpfs), a writer told "failed" never finds its record in the
cassette later, records nobody waited for are kept and retried, and writing resumes once space returns."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from mcpgw.recorder.store import CassetteStore, StoreWriteError


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
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


# -- issue 50 item 12: a real recording gateway on a full disk -------------------------------------------------

@pytest.fixture
def disk_20m(tmp_path):
    mount = tmp_path / "disk20"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\1" * 65536)
    except OSError:
        try:  # the last few KiB too: nothing left for the cassette to grow into
            while True:
                os.write(fd, b"\1" * 512)
        except OSError:
            pass
    finally:
        os.close(fd)


def test_a_recording_gateway_on_a_full_disk_logs_every_call_and_retries_held_lines_on_a_timer(gateway_factory, disk_20m):
    """16 clients call through a recording gateway whose disk is full: every call answered (result or error) has
    its record with an outcome, the call-log lines held while the disk was full are written within seconds of
    space returning with no further call (a kill -9 then loses none), /status clears, and the failure is one
    ERROR line, not one per failed commit."""
    import signal
    import time

    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from mcpgw.recorder.calllog import iter_calls
    from tests.conftest import misbehaving_entry

    gateway = gateway_factory("version: 1\nservers:\n" + misbehaving_entry("probe"),
                              "--mode", "record", "--cassettes-dir", str(disk_20m))
    answered: dict[str, bool] = {}  # message -> the client got a result (else an error)

    async def clients(prefix: str, count: int, calls: int) -> None:
        async def one(n: int) -> None:
            async with Client(gateway.url) as client:
                for i in range(calls):
                    message = f"{prefix}-{n}-{i}"
                    try:
                        await client.call_tool("probe__echo", {"message": message})
                        answered[message] = True
                    except MCPError:
                        answered[message] = False

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for n in range(count):
                    tg.start_soon(one, n)

    anyio.run(clients, "before", 1, 1)
    assert answered == {"before-0-0": True}
    filler = disk_20m / "filler"
    _fill(filler)
    anyio.run(clients, "full", 16, 12)
    failing = gateway.status()["call_log"]
    assert failing["error"] and "write failing" in failing["error"], failing
    assert not all(answered.values())  # the disk was full: some recordings could not be written, and clients were told

    filler.unlink()  # space returns; no call comes: the held lines are written by the retry timer alone
    deadline = time.monotonic() + 15
    health = gateway.status()["call_log"]
    while time.monotonic() < deadline and (health["error"] or health.get("held")):
        time.sleep(0.2)
        health = gateway.status()["call_log"]
    assert health["error"] is None and not health.get("held"), health
    assert health["dropped"] == 0, health
    os.killpg(gateway.process.pid, signal.SIGKILL)  # nothing more is written at exit
    gateway.process.wait(timeout=10)

    records = {r["arguments"]["message"]: r for r in iter_calls(disk_20m / "test") if r.get("arguments")}
    missing = sorted(set(answered) - set(records))
    assert not missing, f"{len(missing)} of {len(answered)} calls have no call-log record: {missing[:5]}"
    for message, ok in answered.items():
        outcome = records[message]["outcome"]
        assert outcome == ("ok" if ok else "upstream_error"), (message, ok, records[message])
    log = gateway.log()
    assert log.count("cassette write failing") == 1, log[-3000:]
    assert "work again" in log
