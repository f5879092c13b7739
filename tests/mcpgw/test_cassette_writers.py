"""Who writes a cassette, with real `mcpgw serve` processes: one writer per cassette (a second is refused at start,
naming the first; a writer killed with -9 leaves nothing locked; replays, which only read, run side by side), a
replay never writes what it plays, an overlay stays tied to the base content it was made over, and a start refused
midway leaves no cassette of its own behind."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from mcpgw.cassette.cassette import Cassette
from tests.conftest import ROOT, RunningGateway, misbehaving_entry, pid_alive, start_gateway, stop_gateway
from tests.replay.test_record_replay import assert_succeeded, calls

ONE = "version: 1\nservers:\n" + misbehaving_entry("fx")
TWO = ONE + misbehaving_entry("fy")


def serve_refused(tmp_path: Path, config: str, *args: str) -> subprocess.CompletedProcess:
    """`mcpgw serve` expected to stop at start: its exit, bounded."""
    config_path = tmp_path / "refused.yaml"
    config_path.write_text(config)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--config",
            str(config_path),
            "--port",
            "0",
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # with the servers it started
        out, err = process.communicate(timeout=10)
        raise AssertionError(f"it started instead of being refused: {err[-2000:]}") from None
    assert process.returncode == 2, (process.returncode, err[-2000:])
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def gateway(tmp_path: Path, name: str, config: str, *args: str) -> RunningGateway:
    """A gateway with a log of its own (tmp_path/name) over the shared cassettes folder (tmp_path/cassettes)."""
    return start_gateway(tmp_path / name, config, "--cassettes-dir", str(tmp_path / "cassettes"), *args)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def info(path: Path) -> dict:
    cassette = Cassette(path, create=False, readonly=True)
    try:
        return cassette.info()
    finally:
        cassette.close()


def test_one_writer_per_cassette_named_when_refused_freed_by_kill_9_while_replays_read_side_by_side(tmp_path):
    first = gateway(tmp_path, "first", ONE, "--mode", "record", "--cassette", "X")
    try:
        refused = serve_refused(tmp_path, ONE, "--mode", "record", "--cassette", "X")
        assert (
            f"cassette {tmp_path / 'cassettes' / 'X'} is being written by pid {first.process.pid} (" in refused.stderr
        )
        assert "one writer per cassette" in refused.stderr and "Traceback" not in refused.stderr
        assert_succeeded(calls(first, [("fx__echo", {"message": "one"})]))
    finally:
        os.killpg(first.process.pid, signal.SIGKILL)  # no orderly close: only the kernel lets go of the lock
        first.process.wait(timeout=10)
    assert not pid_alive(first.process.pid)

    again = gateway(tmp_path, "again", ONE, "--mode", "record", "--cassette", "X")
    assert_succeeded(calls(again, [("fx__echo", {"message": "two"})], run_id="r2"))
    stop_gateway(again)

    # Replays only read X: two at once both start. Their overlay is written: one writer, the second refused.
    one = gateway(tmp_path, "replay1", ONE, "--mode", "replay", "--cassette", "X", "--overlay", "O")
    two = gateway(tmp_path, "replay2", ONE, "--mode", "replay", "--cassette", "X")
    try:
        assert calls(one, [("fx__echo", {"message": "one"})]) == calls(two, [("fx__echo", {"message": "one"})])
        refused = serve_refused(tmp_path, ONE, "--mode", "replay", "--cassette", "X", "--overlay", "O")
        assert f"is being written by pid {one.process.pid} (" in refused.stderr
        # a --log-cassette is written too
        log = gateway(tmp_path, "log", ONE, "--mode", "replay", "--cassette", "X", "--log-cassette", "L")
        try:
            refused = serve_refused(tmp_path, ONE, "--mode", "replay", "--cassette", "X", "--log-cassette", "L")
            assert (
                f"cassette {tmp_path / 'cassettes' / 'L'} is being written by pid {log.process.pid} (" in refused.stderr
            )
        finally:
            stop_gateway(log)
    finally:
        stop_gateway(one)
        stop_gateway(two)
    gateway_again = gateway(tmp_path, "replay3", ONE, "--mode", "replay", "--cassette", "X", "--overlay", "O")
    stop_gateway(gateway_again)  # an orderly stop lets go as well


def test_a_replay_never_writes_its_base_and_a_server_joins_a_hybrid_cassette_with_its_first_exchange(tmp_path):
    recorder = gateway(tmp_path, "record", ONE, "--mode", "record", "--cassette", "X")
    assert_succeeded(calls(recorder, [("fx__echo", {"message": "a"})]))
    stop_gateway(recorder)
    base = tmp_path / "cassettes" / "X"
    before = {name: digest(base / name) for name in ("data.mdb",)}
    servers_before = set(info(base)["servers"])

    # --mode replay --on-miss live would write the played cassette: refused, saying how to do either
    refused = serve_refused(tmp_path, TWO, "--mode", "replay", "--cassette", "X", "--on-miss", "live")
    assert "a replay never writes what it plays: add --overlay NAME" in refused.stderr
    assert "--mode hybrid to record them into it" in refused.stderr

    # hybrid, a server the cassette lacks started live, and no call: X is not touched, byte for byte
    hybrid = gateway(tmp_path, "hybrid", TWO, "--mode", "hybrid", "--cassette", "X")
    try:
        hybrid.wait_state("fy", ("ready",))
        assert "into the played cassette itself, as --mode hybrid does" in hybrid.log()
        assert {name: digest(base / name) for name in before} == before
        assert set(info(base)["servers"]) == servers_before == {"fx"}
        # a call to the new server is recorded: the server joins X's list and catalogs with it
        assert_succeeded(calls(hybrid, [("fy__echo", {"message": "new"})]))
        assert set(info(base)["servers"]) == {"fx", "fy"}
    finally:
        stop_gateway(hybrid)
    replay = gateway(tmp_path, "replay", TWO, "--mode", "replay", "--cassette", "X")
    try:
        assert calls(replay, [("fy__echo", {"message": "new"})])[0]["content"][0]["text"] == "echo: new"
    finally:
        stop_gateway(replay)


def test_an_overlay_over_a_base_recorded_into_again_is_refused_and_a_refused_start_leaves_no_overlay(tmp_path):
    cassettes = tmp_path / "cassettes"
    recorder = gateway(tmp_path, "record", ONE, "--mode", "record", "--cassette", "X")
    assert_succeeded(calls(recorder, [("fx__echo", {"message": "a"})]))
    stop_gateway(recorder)

    # One name for --log-cassette and --overlay: said plainly, and nothing is made
    same = serve_refused(tmp_path, ONE, "--mode", "replay", "--cassette", "X", "--overlay", "O", "--log-cassette", "O")
    assert "--log-cassette and --overlay both name 'O'" in same.stderr and "corrupt" not in same.stderr
    # A start refused after its overlay (and its call log) were opened takes them away again
    os.environ.pop("MCPGW_TEST_UNSET_KEY", None)
    late = serve_refused(
        tmp_path,
        ONE,
        "--mode",
        "replay",
        "--cassette",
        "X",
        "--overlay",
        "O",
        "--on-miss",
        "simulate",
        "--simulator-base-url",
        "http://127.0.0.1:9/v1",
        "--simulator-model",
        "m",
        "--simulator-key-env",
        "MCPGW_TEST_UNSET_KEY",
    )
    assert "MCPGW_TEST_UNSET_KEY: that environment variable is not set" in late.stderr
    assert sorted(p.name for p in cassettes.iterdir()) == ["X"]
    assert not (cassettes / "X" / "runs").exists() or not any((cassettes / "X" / "runs").iterdir())

    # --model-mode live without an overlay: said at start. The overlay made here is tied to X as it is.
    made = gateway(tmp_path, "overlay", ONE, "--mode", "replay", "--cassette", "X", "--overlay", "O")
    stop_gateway(made)
    warned = gateway(
        tmp_path,
        "model",
        ONE,
        "--mode",
        "replay",
        "--cassette",
        "X",
        "--model-mode",
        "live",
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
    )
    stop_gateway(warned)
    assert "--model-mode live without --overlay: the model's exchanges are answered live" in warned.log()

    # X recorded into again: O's answers were made over the old X, so O is refused, with the reason
    again = gateway(tmp_path, "again", ONE, "--mode", "record", "--cassette", "X")
    assert_succeeded(calls(again, [("fx__echo", {"message": "b"})], run_id="r2"))
    stop_gateway(again)
    refused = serve_refused(tmp_path, ONE, "--mode", "replay", "--cassette", "X", "--overlay", "O")
    assert (
        "overlay 'O' was made over cassette 'X' as it was then, and that cassette has changed since" in refused.stderr
    )
    assert "it holds 2 exchanges now, 1 when the overlay was made" in refused.stderr
    assert (cassettes / "O" / "data.mdb").exists()  # an overlay that existed before is never taken away
