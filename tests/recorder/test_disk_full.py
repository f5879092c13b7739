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



def _fill_up(path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)  # the rest of the disk, unbuffered
    try:
        while True:
            os.write(fd, b"\1" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_held_call_log_line_committed_with_a_write_someone_waits_for_is_kept_when_that_write_fails(small_disk):
    """Issue 50 item 12: a hot call's record, held for its turn's batch, goes into the next waited write's
    transaction; when that fails, the waiter is told, but the record nobody waited for is kept and retried (it
    was dropped with the waited write, so an answered call had no record), on a timer once space returns."""
    from mcpgw.gateway.http.commit_batch import Batch

    store = CassetteStore(small_disk / "cassette")
    filler = small_disk / "filler"

    async def scenario() -> bool:
        await store.put("exchanges", b"before", {"n": 0}, wait=True)
        _fill_up(filler)
        batch = Batch()
        batch.collect(asyncio.get_running_loop())
        try:
            store.append("calls", {"tool": "held-for-the-turn"})  # held for the batch, not committed yet
        finally:
            batch.stop()
        failed = False
        try:  # carries the held record into its transaction
            await store.put("exchanges", b"told-failed", {"blob": "x" * 200_000}, wait=True)
        except StoreWriteError:
            failed = True
        filler.unlink()
        for _ in range(100):  # no further write: the writer thread's timer writes what is held
            if store.health()["error"] is None:
                break
            await asyncio.sleep(0.05)
        return failed

    assert asyncio.run(scenario())
    assert store.health()["error"] is None and store.health()["held"] == 0
    assert store.get("exchanges", b"told-failed") is None
    assert [record["tool"] for _, record in store.items("calls")] == ["held-for-the-turn"]
    store.close()



def test_records_given_up_past_the_held_limit_are_counted_in_the_call_logs_dropped(small_disk, monkeypatch):
    """Issue 50 item 12: held records past MAX_PENDING are given up oldest first, and the call log's `dropped`
    (/status) counts them, so every call is in the log or counted."""
    from mcpgw.recorder import store as store_module
    from mcpgw.recorder.calllog import CallLog

    monkeypatch.setattr(store_module, "MAX_PENDING", 3)
    store = CassetteStore(small_disk / "cassette")
    log = CallLog(store)

    async def scenario() -> None:
        await store.put("exchanges", b"before", {"n": 0}, wait=True)
        _fill_up(small_disk / "filler")
        for n in range(5):
            log.append({"seq": None, "exposed_name": f"call-{n}", "blob": "x" * 100_000})

    asyncio.run(scenario())
    health = log.health()
    assert health["dropped"] == 2 and health["held"] == 3, health
    assert "write failing" in health["error"] and "2 dropped" in health["error"], health
    (small_disk / "filler").unlink()
    store.close()  # the three held are written at close
    reopened = CassetteStore(small_disk / "cassette", create=False, readonly=True)
    assert [record["exposed_name"] for _, record in reopened.items("calls")] == ["call-2", "call-3", "call-4"]
    reopened.env.close()


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
