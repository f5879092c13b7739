"""Issue 44, item 2: in front of one server, `/mcp` and `serve --stdio` name its tools as the server does
(as its per-server endpoint does); in front of several, `<server>__<tool>`; an explicit `--naming` wins.

Names are what clients see; cassette keys hold the server id and the server's own tool name, so a cassette
recorded under prefixed names replays under bare ones, and the other way round.
"""

from __future__ import annotations

import sys

from mcp import StdioServerParameters

from mcpgw.gateway.tools.naming import chosen_mode
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_per_server import run, sdk_calls

ONE = "version: 1\nservers:\n" + misbehaving_entry("fx")
TWO = ONE + misbehaving_entry("other")


def test_auto_naming_is_bare_for_one_server_only():
    assert chosen_mode("auto", 1) == "bare"
    assert chosen_mode("auto", 2) == "prefix" and chosen_mode("auto", 0) == "prefix"
    assert [chosen_mode(m, 1) for m in ("prefix", "bare", "benchmark")] == ["prefix", "bare", "benchmark"]


def test_one_server_is_bare_on_mcp_and_stdio_and_a_prefixed_recording_still_replays(tmp_path):
    # Recorded as before this change: one server, prefixed names (`--naming prefix`).
    recorder = start_gateway(tmp_path, ONE, "--mode", "record", "--cassette", "rec", naming="prefix")
    try:
        names, recorded = run(lambda: sdk_calls(recorder.url, "legacy", [("fx__echo", {"message": "once"})]))
    finally:
        stop_gateway(recorder)
    assert "fx__echo" in names and recorded[0]["content"][0]["text"] == "echo: once"

    # Replayed with the default naming over /mcp: the server's own names, answered from that recording.
    player = start_gateway(
        tmp_path / "p",
        ONE,
        "--mode",
        "replay",
        "--cassette",
        "rec",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--log-cassette",
        "log",
        naming=None,
    )
    try:
        names, replayed = run(lambda: sdk_calls(player.url, "legacy", [("echo", {"message": "once"})]))
        assert player.status()["naming"] == "bare"
    finally:
        stop_gateway(player)
    assert "echo" in names and not any("__" in n for n in names)
    assert replayed == recorded
    (record,) = iter_calls(tmp_path / "cassettes" / "log")
    assert (record["server"], record["tool"], record["exposed_name"], record["source"]) == (
        "fx",
        "echo",
        "echo",
        "recorded",
    )

    # The same over stdio (MCPEval's path: `serve --stdio` in front of its one server).
    params = StdioServerParameters(
        command=sys.executable,
        cwd=str(ROOT),
        args=[
            "-m",
            "mcpgw.cli",
            "serve",
            "--stdio",
            "--config",
            str(tmp_path / "config.yaml"),
            "--mode",
            "replay",
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--cassette",
            "rec",
            "--log-cassette",
            "stdio-log",
        ],
    )
    names, over_stdio = run(lambda: sdk_calls(params, "legacy", [("echo", {"message": "once"})]))
    assert "echo" in names and not any("__" in n for n in names)
    assert over_stdio == recorded
    (record,) = iter_calls(tmp_path / "cassettes" / "stdio-log")
    assert (record["tool"], record["endpoint"], record["source"]) == ("echo", "stdio", "recorded")


def test_several_servers_keep_prefixes_and_an_explicit_naming_wins(tmp_path):
    several = start_gateway(tmp_path / "two", TWO, "--mode", "live", naming=None)
    try:
        names, _ = run(lambda: sdk_calls(several.url, "legacy", []))
        assert several.status()["naming"] == "prefix"
    finally:
        stop_gateway(several)
    assert "fx__echo" in names and "other__echo" in names

    pinned = start_gateway(tmp_path / "one", ONE, "--mode", "live", "--naming", "prefix", naming=None)
    try:
        names, results = run(lambda: sdk_calls(pinned.url, "legacy", [("fx__echo", {"message": "hi"})]))
    finally:
        stop_gateway(pinned)
    assert "fx__echo" in names and "echo" not in names and results[0]["content"][0]["text"] == "echo: hi"
