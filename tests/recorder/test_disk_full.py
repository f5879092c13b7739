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
    from mcpgw.cassette import store as store_module
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
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount)], capture_output=True
        ).returncode
        != 0
    ):
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


def _call_concurrently(url: str, prefix: str, clients: int, calls: int, message: str | None = None) -> dict[str, bool]:
    """`clients` MCP clients at once, each making `calls` echo calls: {call name: it got a result (else an error)}.
    Each call echoes its own name, or `message` when given (then each is named by the client's session)."""
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    answered: dict[str, bool] = {}

    async def one(n: int) -> None:
        async with Client(url) as client:
            for i in range(calls):
                name = f"{prefix}-{n}-{i}"
                try:
                    await client.call_tool("probe__echo", {"message": message or name})
                    answered[name] = True
                except MCPError:
                    answered[name] = False

    async def all_of_them() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for n in range(clients):
                    tg.start_soon(one, n)

    anyio.run(all_of_them)
    return answered


def _held_lines_written_by_the_timer(gateway, filler) -> None:
    """Space returns and no call comes: the held lines are written (by the retry timer alone) and /status clears;
    then the gateway is killed -9, so nothing is written at its exit."""
    import signal
    import time

    failing = gateway.status()["call_log"]
    assert failing["error"] and "write failing" in failing["error"], failing
    filler.unlink()
    deadline = time.monotonic() + 15
    health = gateway.status()["call_log"]
    while time.monotonic() < deadline and (health["error"] or health.get("held")):
        time.sleep(0.2)
        health = gateway.status()["call_log"]
    assert health["error"] is None and not health.get("held"), health
    assert health["dropped"] == 0, health
    os.killpg(gateway.process.pid, signal.SIGKILL)
    gateway.process.wait(timeout=10)
    log = gateway.log()
    assert log.count("cassette write failing") == 1, log[-3000:]  # one ERROR line for the episode
    assert "work again" in log


def test_a_recording_gateway_on_a_full_disk_logs_every_call_and_retries_held_lines_on_a_timer(
    gateway_factory, disk_20m
):
    """16 clients call through a recording gateway whose disk is full: every call answered (result or error) has
    its record with an outcome, the call-log lines held while the disk was full are written within seconds of
    space returning with no further call (a kill -9 then loses none), /status clears, and the failure is one
    ERROR line, not one per failed commit."""
    from mcpgw.recorder.calllog import iter_calls
    from tests.conftest import misbehaving_entry

    gateway = gateway_factory(
        "version: 1\nservers:\n" + misbehaving_entry("probe"), "--mode", "record", "--cassettes-dir", str(disk_20m)
    )
    assert _call_concurrently(gateway.url, "before", 1, 1) == {"before-0-0": True}
    filler = disk_20m / "filler"
    _fill(filler)
    answered = _call_concurrently(gateway.url, "full", 16, 12)
    assert not all(answered.values())  # the disk was full: some recordings could not be written, and clients were told
    _held_lines_written_by_the_timer(gateway, filler)

    records = {r["arguments"]["message"]: r for r in iter_calls(disk_20m / "test") if r.get("arguments")}
    missing = sorted(set(answered) - set(records))
    assert not missing, f"{len(missing)} of {len(answered)} calls have no call-log record: {missing[:5]}"
    for message, ok in answered.items():
        outcome = records[message]["outcome"]
        assert outcome == ("ok" if ok else "upstream_error"), (message, ok, records[message])


def test_a_replay_on_a_full_disk_writes_its_held_log_lines_once_space_returns_with_no_new_call(
    gateway_factory, disk_20m, tmp_path
):
    """The replay's call log (a cassette of its own, beside the played one) on a full disk: the calls are answered
    from the recording, their log lines held; once space returns they are written with no further call, and
    a kill -9 after that loses none (they used to wait for a next write, and /status said failing until exit)."""
    from mcpgw.recorder.calllog import iter_calls
    from mcpgw.recorder.replay_logs import replay_logs
    from tests.conftest import misbehaving_entry, stop_gateway

    config = "version: 1\nservers:\n" + misbehaving_entry("probe", extra="    flags: [stateless]\n")
    recording = gateway_factory(config, "--mode", "record", "--cassettes-dir", str(disk_20m))
    assert _call_concurrently(recording.url, "rec", 1, 1, message="again") == {"rec-0-0": True}
    stop_gateway(recording)
    (tmp_path / "gateway.log").rename(tmp_path / "recording.log")

    gateway = gateway_factory(config, "--mode", "replay", "--cassettes-dir", str(disk_20m))
    filler = disk_20m / "filler"
    _fill(filler)
    answered = _call_concurrently(gateway.url, "full", 16, 12, message="again")
    assert all(answered.values()), answered  # answered from the recording: its log is what cannot be written
    _held_lines_written_by_the_timer(gateway, filler)

    [log] = replay_logs(disk_20m / "test")
    records = [r for r in iter_calls(log) if r.get("exposed_name") == "probe__echo"]
    assert len(records) == len(answered) and all(r["outcome"] == "ok" for r in records), len(records)
