"""Record against live servers, replay offline: same answers, clear misses, no lost exchanges."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.cassette.cassette import Cassette
from mcpgw.cli import main
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run
from tests.inprocess import start_inprocess

FIXTURE = "version: 1\nservers:\n" + misbehaving_entry("fx")


async def acalls(gateway, steps, *, mode="legacy", run_id="r1"):
    """Run (tool, arguments) steps in one client session; return each result or {"error": text}.
    Callers assert each call's outcome: two runs failing the same way compare equal."""
    out = []
    with anyio.fail_after(60):
        async with Client(f"{gateway.url}?run={run_id}", mode=mode) as client:
            for name, arguments in steps:
                try:
                    result = await client.call_tool(name, arguments)
                    out.append(result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}))
                except MCPError as exc:
                    out.append({"error": str(exc)})
    return out


def calls(gateway, steps, *, mode="legacy", run_id="r1"):
    """`acalls` for a test that is not async (other modules import it)."""
    return run(lambda: acalls(gateway, steps, mode=mode, run_id=run_id))


def assert_succeeded(results):
    for index, result in enumerate(results):
        assert "error" not in result and not result.get("isError"), (index, result)


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_record_then_replay_twice_offline_identical_in_both_eras(tmp_path, monkeypatch):
    config = """version: 1
servers:
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time"]
    flags: [nondeterministic]
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
"""
    steps = [
        ("time__get_current_time", {"timezone": "UTC"}),
        ("everything__echo", {"message": "hi"}),
        ("everything__get-sum", {"a": 1, "b": 2}),
        ("everything__get-structured-content", {"location": "New York"}),
        ("time__get_current_time", {"timezone": "UTC"}),
    ]
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "rec")
    recorded = calls(recorder, steps)
    assert_succeeded(recorded)
    assert recorded[1]["content"][0]["text"] == "Echo: hi" and "3" in recorded[2]["content"][0]["text"]
    time.sleep(1.1)
    recorded_again_live = calls(recorder, steps[:1], run_id="r2")
    stop_gateway(recorder)
    assert recorded[0] != recorded_again_live[0]  # the clock moved: live answers differ

    # Replay with no way to start any server: PATH has neither npx nor uvx.
    monkeypatch.setenv("PATH", "/nonexistent")
    for attempt in range(2):
        for mode in ("legacy", "2026-07-28"):
            player = start_gateway(
                tmp_path / f"p{attempt}{mode}",
                "version: 1\nservers:\n  x: {command: x}\n",
                "--mode",
                "replay",
                "--cassette",
                "rec",
                "--cassettes-dir",
                str(tmp_path / "cassettes"),
            )
            try:
                assert all(s["pid"] is None for s in player.status()["servers"].values())
                replayed = calls(player, steps, mode=mode, run_id=f"replay-{attempt}")
            finally:
                stop_gateway(player)
            assert_succeeded(replayed)
            assert replayed == recorded, (attempt, mode)


@pytest.mark.anyio
async def test_miss_names_nearest_and_hybrid_records_it(tmp_path, capsys):
    recorder = start_inprocess(tmp_path, FIXTURE, "--mode", "record", "--cassette", "c")
    await acalls(recorder, [("fx__echo", {"message": "alpha"}), ("fx__echo", {"message": "beta"})])
    recorder.stop()

    player = start_inprocess(
        tmp_path / "p",
        FIXTURE,
        "--mode",
        "replay",
        "--cassette",
        "c",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--log-cassette",
        "log",
    )
    out = await acalls(player, [("fx__echo", {"message": "alpha"}), ("fx__echo", {"message": "gamma"})])
    player.stop()
    assert out[0]["content"][0]["text"] == "echo: alpha"
    miss = out[1]["error"]
    assert "replay miss" in miss and "'echo'" in miss and "server 'fx'" in miss
    assert 'message: recorded "alpha", asked "gamma"' in miss
    log = list(iter_calls(tmp_path / "cassettes" / "log"))
    assert (
        [r["outcome"] for r in log] == ["ok", "miss"]
        and log[0]["source"] == "recorded"
        and log[1]["source"] == "missed"
        and log[0]["cassette_key"]
    )

    hybrid = start_inprocess(
        tmp_path / "h",
        FIXTURE,
        "--mode",
        "hybrid",
        "--cassette",
        "c",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--log-cassette",
        "hlog",
    )
    out = await acalls(hybrid, [("fx__echo", {"message": "gamma"}), ("fx__echo", {"message": "alpha"})])
    hybrid.stop()
    assert [o["content"][0]["text"] for o in out] == ["echo: gamma", "echo: alpha"]
    # fx declares no statefulness: once its lane went live it stays live (the live instance holds
    # the run's state now), so the recorded 'alpha' is asked live too, not taken from the cassette.
    assert [r["source"] for r in iter_calls(tmp_path / "cassettes" / "hlog")] == ["live", "live"]

    again = start_inprocess(
        tmp_path / "a", FIXTURE, "--mode", "replay", "--cassette", "c", "--cassettes-dir", str(tmp_path / "cassettes")
    )
    out = await acalls(again, [("fx__echo", {"message": "gamma"})])
    again.stop()
    assert out[0]["content"][0]["text"] == "echo: gamma"  # hybrid recorded it

    capsys.readouterr()
    assert main(["cassette", "--cassettes-dir", str(tmp_path / "cassettes"), "show", "c", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tool_calls"] == {"fx:echo": 4}  # alpha, beta recorded; gamma, alpha added by hybrid
    assert summary["replay"]["runs"] == 3 and summary["replay"]["misses"] == 2


TIME_ENTRY = """  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
"""
CONVERT = ("time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})


@pytest.mark.real  # starts a registry package (uvx)
def test_hybrid_serves_a_server_the_cassette_lacks_live_and_records_it(tmp_path):
    """A server added to the config after the recording was started (its process ran) but said
    "unavailable (not in the cassette)": no tool listed, every call "Unknown tool", in a mode whose misses go live."""
    recorder = start_gateway(tmp_path, FIXTURE, "--mode", "record", "--cassette", "c")
    assert_succeeded(calls(recorder, [("fx__echo", {"message": "alpha"})]))
    stop_gateway(recorder)

    cassettes = str(tmp_path / "cassettes")
    hybrid = start_gateway(
        tmp_path / "h",
        FIXTURE + TIME_ENTRY,
        "--mode",
        "hybrid",
        "--cassette",
        "c",
        "--cassettes-dir",
        cassettes,
        "--log-cassette",
        "hlog",
    )
    try:  # a failed check must not leave the gateway running
        status = hybrid.status()["servers"]["time"]
        out = calls(hybrid, [("fx__echo", {"message": "alpha"}), CONVERT])
    finally:
        stop_gateway(hybrid)
    assert status["state"] == "ready" and status["tools"] >= 2, status
    assert_succeeded(out)
    assert out[0]["content"][0]["text"] == "echo: alpha"
    assert json.loads(out[1]["content"][0]["text"])["target"]["timezone"] == "Asia/Tokyo", out[1]
    assert [r["source"] for r in iter_calls(tmp_path / "cassettes" / "hlog")] == ["recorded", "live"]

    again = start_gateway(
        tmp_path / "a",
        FIXTURE + TIME_ENTRY,
        "--mode",
        "replay",
        "--cassette",
        "c",
        "--cassettes-dir",
        cassettes,
        "--log-cassette",
        "alog",
    )
    try:
        replayed = calls(again, [CONVERT])
    finally:
        stop_gateway(again)
    assert replayed == out[1:]  # hybrid recorded the new server's catalog and its call
    assert [r["source"] for r in iter_calls(tmp_path / "cassettes" / "alog")] == ["recorded"]


STATELESS_FIXTURE = "version: 1\nservers:\n" + misbehaving_entry("fx", extra="    flags: [stateless]\n")


@pytest.mark.anyio
@pytest.mark.parametrize("declared", ["stateless", "undeclared"])
async def test_repeated_calls_replay_in_recorded_order(tmp_path, declared):
    config = STATELESS_FIXTURE if declared == "stateless" else FIXTURE
    recorder = start_inprocess(tmp_path, config, "--mode", "record", "--cassette", "c")
    recorded = await acalls(recorder, [("fx__counter", {})] * 3)
    recorder.stop()
    assert [r["content"][0]["text"] for r in recorded] == ["count 1", "count 2", "count 3"]
    # A stateless server answers identical calls in recorded order and past_end decides after that.
    # An undeclared one may have changed state with each call (counter has no readOnlyHint): a 4th call
    # was never recorded at that state, so it misses whatever past_end says; repeating "count 3" would lie.
    fourth_after_end = {"repeat": "count 3" if declared == "stateless" else None, "miss": None}
    for past_end, fourth in fourth_after_end.items():
        player = start_inprocess(
            tmp_path / past_end,
            config,
            "--mode",
            "replay",
            "--cassette",
            "c",
            "--past-end",
            past_end,
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
        )
        first = await acalls(player, [("fx__counter", {})] * 4, run_id="one")
        second = await acalls(player, [("fx__counter", {})] * 2, run_id="two")  # another run starts its own lane
        player.stop()
        assert [r["content"][0]["text"] for r in first[:3]] == ["count 1", "count 2", "count 3"]
        if fourth is None:  # refused: the replay-miss error, not just any failure
            assert (
                set(first[3]) == {"error"} and "replay miss" in first[3]["error"] and "'counter'" in first[3]["error"]
            )
        else:
            assert first[3]["content"][0]["text"] == fourth
        assert [r["content"][0]["text"] for r in second] == ["count 1", "count 2"]


@pytest.mark.anyio
async def test_stateful_server_diverging_sequence_is_a_miss(tmp_path):
    config = FIXTURE + "    flags: [stateful]\n"
    recorder = start_inprocess(tmp_path, config, "--mode", "record", "--cassette", "c")
    await acalls(recorder, [("fx__echo", {"message": "a"}), ("fx__echo", {"message": "b"})])
    recorder.stop()
    player = start_inprocess(
        tmp_path / "p", config, "--mode", "replay", "--cassette", "c", "--cassettes-dir", str(tmp_path / "cassettes")
    )
    same = await acalls(player, [("fx__echo", {"message": "a"}), ("fx__echo", {"message": "b"})], run_id="same")
    other = await acalls(player, [("fx__echo", {"message": "b"})], run_id="other")
    player.stop()
    assert [s["content"][0]["text"] for s in same] == ["echo: a", "echo: b"]
    assert "replay miss" in other[0]["error"] and "stateful" not in other[0]["error"]  # first call: no history yet
    assert "nearest recorded" in other[0]["error"]


@pytest.mark.anyio
async def test_secrets_never_reach_the_cassette(tmp_path):
    secret = "sk-test-9f8e7d6c5b4a3210"
    config = FIXTURE + f'    env: {{API_TOKEN: "{secret}"}}\n'
    recorder = start_inprocess(tmp_path, config, "--mode", "record", "--cassette", "c", "--redact", r"tok_[0-9]+")
    out = await acalls(recorder, [("fx__env", {"name": "API_TOKEN"}), ("fx__echo", {"message": "tok_12345 and more"})])
    recorder.stop()
    assert out[0]["content"][0]["text"] == f"API_TOKEN={secret}"  # the live client sees the real value
    for path in (tmp_path / "cassettes" / "c").iterdir():
        data = path.read_bytes()
        assert secret.encode() not in data and b"tok_12345" not in data, path
    player = start_inprocess(
        tmp_path / "p", config, "--mode", "replay", "--cassette", "c", "--cassettes-dir", str(tmp_path / "cassettes")
    )
    replayed = await acalls(
        player, [("fx__env", {"name": "API_TOKEN"}), ("fx__echo", {"message": "tok_12345 and more"})]
    )
    player.stop()
    assert replayed[0]["content"][0]["text"] == "API_TOKEN=«redacted»"  # matched (key from the raw request), redacted
    assert replayed[1]["content"][0]["text"] == "echo: «redacted» and more"


def test_kill_9_while_recording_loses_no_acknowledged_exchange(tmp_path):
    gateway = start_gateway(tmp_path, FIXTURE, "--mode", "record", "--cassette", "c")
    acknowledged: list[str] = []

    async def client(n: int) -> None:
        try:
            async with Client(gateway.url, mode="legacy") as c:
                for i in range(100_000):
                    message = f"{n}-{i}"
                    await c.call_tool("fx__echo", {"message": message})
                    acknowledged.append(message)
        except BaseException:  # noqa: BLE001 - the gateway dies under us
            pass

    async def killer() -> None:
        while len(acknowledged) < 2000:
            await anyio.sleep(0.05)
        os.killpg(gateway.process.pid, signal.SIGKILL)

    async def go() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for n in range(8):
                    tg.start_soon(client, n)
                tg.start_soon(killer)

    anyio.run(go)
    gateway.process.wait(10)
    cassette = Cassette(tmp_path / "cassettes" / "c", create=False)
    try:
        stored = {entry["params"]["arguments"]["message"] for _, entry in cassette.store.items("exchanges")}
    finally:
        cassette.close()
    assert len(acknowledged) >= 2000
    missing = [m for m in acknowledged if m not in stored]
    assert not missing, f"{len(missing)} acknowledged exchanges lost, e.g. {missing[:3]}"


def test_cassette_errors_are_clear(tmp_path):
    def mcpgw(*args):  # a port of its own: a gateway on the default one would be refused first
        return subprocess.run(
            [sys.executable, "-m", "mcpgw.cli", *args, "--port", str(free_port())],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )

    cassettes = tmp_path / "cassettes"
    missing = mcpgw("serve", "--mode", "replay", "--cassette", "nope", "--cassettes-dir", str(cassettes))
    assert missing.returncode == 2 and "no cassette 'nope'" in missing.stderr and "Traceback" not in missing.stderr
    escape = mcpgw("serve", "--mode", "replay", "--cassette", "../../etc", "--cassettes-dir", str(cassettes))
    assert escape.returncode == 2 and "invalid cassette name" in escape.stderr
    (cassettes / "corrupt").mkdir(parents=True)
    (cassettes / "corrupt" / "data.mdb").write_bytes(os.urandom(8192))
    corrupt = mcpgw("serve", "--mode", "replay", "--cassette", "corrupt", "--cassettes-dir", str(cassettes))
    assert corrupt.returncode == 2 and "corrupt" in corrupt.stderr and "Traceback" not in corrupt.stderr
    import lmdb

    env = lmdb.open(str(cassettes / "foreign"), max_dbs=2)
    with env.begin(write=True) as txn:
        txn.put(b"hello", b"world")
    env.close()
    foreign = mcpgw("serve", "--mode", "replay", "--cassette", "foreign", "--cassettes-dir", str(cassettes))
    assert foreign.returncode == 2 and "not a mcpgw-cassette cassette" in foreign.stderr


@pytest.mark.anyio
async def test_hybrid_on_a_stateful_server_records_what_replay_will_ask(tmp_path):
    config = FIXTURE + "    flags: [stateful]\n"
    recorder = start_inprocess(tmp_path, config, "--mode", "record", "--cassette", "c")
    await acalls(recorder, [("fx__echo", {"message": "a"})])
    recorder.stop()
    session = [("fx__echo", {"message": "a"}), ("fx__counter", {}), ("fx__echo", {"message": "a"})]
    hybrid = start_inprocess(
        tmp_path / "h",
        config,
        "--mode",
        "hybrid",
        "--cassette",
        "c",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--log-cassette",
        "hlog",
    )
    first = await acalls(hybrid, session, run_id="s1")
    hybrid.stop()
    assert [r["content"][0]["text"] for r in first] == ["echo: a", "count 1", "echo: a"]
    # After the live counter call the history differs from the recording: the second echo goes live too.
    assert [r["source"] for r in iter_calls(tmp_path / "cassettes" / "hlog")] == ["recorded", "live", "live"]
    player = start_inprocess(
        tmp_path / "p",
        config,
        "--mode",
        "replay",
        "--cassette",
        "c",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--log-cassette",
        "plog",
    )
    again = await acalls(player, session, run_id="s2")
    player.stop()
    assert again == first
    assert [r["outcome"] for r in iter_calls(tmp_path / "cassettes" / "plog")] == ["ok", "ok", "ok"]


@pytest.mark.anyio
async def test_big_integer_arguments_are_logged_and_recorded(tmp_path):
    recorder = start_inprocess(tmp_path, FIXTURE, "--mode", "record", "--cassette", "c")
    out = await acalls(recorder, [("fx__echo", {"message": 2**70})])
    recorder.stop()
    assert out[0]["content"][0]["text"] == f"echo: {2**70}"
    record = list(iter_calls(tmp_path / "cassettes" / "c"))[0]
    assert record["arguments"] == {"message": str(2**70)} and record["outcome"] == "ok"


@pytest.mark.anyio
async def test_a_miss_names_the_difference_deep_inside_the_arguments_in_both_eras(tmp_path):
    # The default cassette's memory session created three entities; one observation asked differently
    # must be named where it is, not cut off inside a 60-character dump of the whole list.
    shutil.copytree(
        ROOT / "cassettes" / "default", tmp_path / "cassettes" / "test", ignore=shutil.ignore_patterns("runs")
    )
    player = start_inprocess(tmp_path, FIXTURE, "--mode", "replay")  # replay: FIXTURE starts nothing
    entities = [
        {
            "entityType": "person",
            "name": "Ada Lovelace",
            "observations": ["Wrote the first published algorithm for a machine", "Born 10 December 1815 in London"],
        },
        {"entityType": "person", "name": "Charles Babbage", "observations": ["Mathematician"]},
        {
            "entityType": "machine",
            "name": "Analytical Engine",
            "observations": ["Designed by Charles Babbage", "Never completed"],
        },
    ]
    try:
        for mode in ("legacy", "2026-07-28"):
            (miss,) = await acalls(
                player, [("memory__create_entities", {"entities": entities})], mode=mode, run_id=f"deep-{mode}"
            )
            assert (
                'entities[1].observations[0]: recorded "Mathematician and inventor", asked "Mathematician"'
                in miss["error"]
            ), miss
    finally:
        player.stop()
