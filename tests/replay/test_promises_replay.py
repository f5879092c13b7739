"""README promises about replay, drift and cassette commands, each checked once.

One recording for the module, made by a 2026-07-28 client through `mcpgw serve --mode record`
in front of the fixture server (tests/fixtures/misbehaving_server.py) and a server flagged
`unsafe`; the tests replay it in both eras (progress included), run `drift` against a "new
version" of the server (an `isError` flip, a content-type change, a text change covered by a
`text:` rule) and exercise `cassette ls | export | merge | rm`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run

STEPS = [("fx__echo", {"message": "hi"}), ("fx__counter", {}), ("fx__garbage", {}), ("risky__echo", {"message": "r"})]


def config(*fx_flags: str, fx_extra: str = "") -> str:
    return (
        "version: 1\nservers:\n"
        + misbehaving_entry("fx", *fx_flags, extra=fx_extra)
        + misbehaving_entry("risky", extra="    flags: [unsafe]\n")
    )


def session(gateway, mode: str, run_id: str):
    """STEPS, then a slow call that reports progress; each result dumped, and the progress seen."""
    progress: list[float] = []

    async def on_progress(value, total, message):
        progress.append(value)

    async def go():
        with anyio.fail_after(60):
            async with Client(f"{gateway.url}?run={run_id}", mode=mode) as client:
                out = [await client.call_tool(name, arguments) for name, arguments in STEPS]
                out.append(await client.call_tool("fx__slow", {"seconds": 0.4}, progress_callback=on_progress))
        return [r.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}) for r in out]

    return run(go), progress


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("promises-replay")
    recorder = start_gateway(tmp, config(), "--mode", "record", "--cassette", "r26")
    try:
        results, progress = session(recorder, "2026-07-28", "rec")
    finally:
        stop_gateway(recorder)
    assert [r["content"][0]["text"] for r in results] == [
        "echo: hi",
        "count 1",
        "after garbage",
        "echo: r",
        "slept 0.4",
    ]
    assert not any(r.get("isError") for r in results) and progress == [1, 2, 3, 4]
    assert {r["protocol_version"] for r in iter_calls(tmp / "cassettes" / "r26")} == {"2026-07-28"}
    return tmp, results


def mcpgw(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_2026_recording_replays_in_both_eras_with_progress(recorded, era, tmp_path, monkeypatch):
    tmp, results = recorded
    monkeypatch.setenv("PATH", "/nonexistent")  # nothing can be started: every answer comes from the cassette
    player = start_gateway(
        tmp_path,
        config(),
        "--mode",
        "replay",
        "--cassette",
        "r26",
        "--cassettes-dir",
        str(tmp / "cassettes"),
        "--log-cassette",
        f"log-{era}",
    )
    try:
        assert all(s["pid"] is None for s in player.status()["servers"].values())
        replayed, progress = session(player, era, f"replay-{era}")
    finally:
        stop_gateway(player)
    assert replayed == results
    assert progress == [1, 2, 3, 4]  # the recorded progress notifications, replayed to the caller
    assert [r["outcome"] for r in iter_calls(tmp / "cassettes" / f"log-{era}")] == ["ok"] * 5


def test_drift_sees_an_iserror_flip_a_content_type_change_and_applies_text_rules(recorded, tmp_path):
    tmp, _ = recorded
    # The "new version": counter now reports an error, garbage answers with an image, echo shouts;
    # the lock's `text:` rule says the echo prefix is volatile.
    v2 = tmp_path / "v2.yaml"
    v2.write_text(
        config(
            "--error-tool",
            "counter",
            "--image-tool",
            "garbage",
            "--echo-prefix",
            "ECHO",
            fx_extra="    ignore:\n      - tool: echo\n        text: ['^(?i:echo)']\n",
        )
    )
    result = mcpgw(
        "drift", "--cassettes-dir", str(tmp / "cassettes"), "--cassette", "r26", "--config", str(v2), "--json"
    )
    assert result.returncode == 1, result.stderr  # changed calls exceed the default --max-drift
    report = json.loads(result.stdout)
    detail = {(c["server"], c["tool"]): c for c in report["calls_detail"]}
    flip = detail[("fx", "counter")]
    assert flip["verdict"] == "failing" and flip["differences"][0] == {
        "path": "$.isError",
        "recorded": False,
        "live": True,
    }
    kind = detail[("fx", "garbage")]
    assert kind["verdict"] == "changed"
    assert kind["differences"] == [{"path": "$.content[0].type", "recorded": "text", "live": "image"}]
    assert detail[("fx", "echo")]["verdict"] == "equal_after_ignore"
    assert detail[("fx", "slow")]["verdict"] == "identical"
    # A server flagged unsafe is not re-issued unless asked.
    assert detail[("risky", "echo")]["verdict"] == "skipped" and "unsafe" in detail[("risky", "echo")]["error"]
    included = json.loads(
        mcpgw(
            "drift",
            "--cassettes-dir",
            str(tmp / "cassettes"),
            "--cassette",
            "r26",
            "--config",
            str(v2),
            "--json",
            "--include-unsafe",
        ).stdout
    )
    assert {(c["server"], c["tool"]): c["verdict"] for c in included["calls_detail"]}[("risky", "echo")] == "identical"


def test_cassette_ls_export_merge_rm(recorded, capsys, monkeypatch):
    """The commands as typed, run in this process (`mcpgw.cli.main`) to keep the test fast."""
    from mcpgw.cli import main

    tmp, _ = recorded
    cassettes = tmp / "cassettes"
    monkeypatch.setenv("COLUMNS", "200")

    def mcpgw_here(*args: str) -> tuple[int, str, str]:
        code = main(["cassette", "--cassettes-dir", str(cassettes), *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = mcpgw_here("ls")
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if line.strip().startswith("│") and line.split()[1] == "r26"]
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells[:2] == ["r26", "2"] and cells[3:5] == ["5", "5"], row  # 2 servers, 5 exchanges, 5 calls

    exported = tmp / "r26.jsonl"
    code, _, err = mcpgw_here("export", "r26", "-o", str(exported))
    assert code == 0, err
    kinds = [json.loads(line)["type"] for line in exported.read_text().splitlines()]
    assert kinds.count("catalog") == 2 and kinds.count("exchange") == 5 and kinds.count("call") == 5

    code, _, err = mcpgw_here("merge", "r26", "r26", "-o", "twice")  # b's recordings after a's
    assert code == 0, err
    code, out, _ = mcpgw_here("show", "twice", "--json")
    shown = json.loads(out)
    assert (
        shown["exchanges"] == 10 and shown["tool_calls"]["fx:echo"] == 2 and sorted(shown["servers"]) == ["fx", "risky"]
    )

    code, _, err = mcpgw_here("rm", "twice")
    assert code == 0 and not (cassettes / "twice").exists(), err
    code, _, err = mcpgw_here("rm", "twice")
    assert code == 2 and err.startswith("mcpgw: ") and "twice" in err


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_drift_learns_the_volatile_fields_of_a_nondeterministic_server(tmp_path):
    """`flags: [nondeterministic]`: fields that differ between two live answers are not drift.
    (`offline` too: uvx starts mcp-server-time from its cache with the registry switched off.)"""
    entry = (
        "version: 1\nservers:\n  time:\n    command: uvx\n"
        '    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time"]\n'
    )
    flagged = entry + "    flags: [nondeterministic, offline, stateless]\n"
    recorder = start_gateway(tmp_path, flagged, "--mode", "record", "--cassette", "clock")
    try:

        async def go():
            with anyio.fail_after(60):
                async with Client(recorder.url, mode="legacy") as client:
                    now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
                    tokyo = await client.call_tool(
                        "time__convert_time",
                        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                    )
                    return now, tokyo

        now, tokyo = run(go)
    finally:
        stop_gateway(recorder)
    assert not now.is_error and "21:00:00+09:00" in tokyo.content[0].text
    cassettes = str(tmp_path / "cassettes")
    # Without the flag the moved clock is drift ("changed": tests/replay/test_drift.py); with it, volatile.
    with_flag = tmp_path / "flagged.yaml"
    with_flag.write_text(flagged)
    result = mcpgw("drift", "--cassettes-dir", cassettes, "--cassette", "clock", "--config", str(with_flag), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    detail = {c["tool"]: c for c in json.loads(result.stdout)["calls_detail"]}
    assert detail["convert_time"]["verdict"] == "identical"
    now_drift = detail["get_current_time"]
    assert now_drift["verdict"] == "equal_after_ignore" and "$.content[0].text:json.datetime" in now_drift["error"]
