"""`--miss-as-tool-error`: a replay miss reaches the agent as the tool's answer (isError, the miss's own
text) instead of a JSON-RPC error that agent frameworks hide or raise; the default stays the error."""

from __future__ import annotations

import pytest

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import start_gateway, stop_gateway
from tests.replay.test_record_replay import assert_succeeded, calls

CONFIG = """version: 1
servers:
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
    flags: [stateless]
"""


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_a_miss_is_a_tool_error_with_the_flag_and_a_json_rpc_error_without(tmp_path):
    recorder = start_gateway(tmp_path / "rec", CONFIG, "--mode", "record", "--cassette", "rec")
    try:
        assert_succeeded(calls(recorder, [("everything__echo", {"message": "recorded"})]))
    finally:
        stop_gateway(recorder)
    cassettes = recorder.cassettes
    asked = [("everything__echo", {"message": "recorded"}), ("everything__echo", {"message": "never recorded"})]

    strict = start_gateway(tmp_path / "strict", CONFIG, "--mode", "replay", "--cassette", str(cassettes / "rec"))
    try:
        hit, miss = calls(strict, asked)
    finally:
        stop_gateway(strict)
    assert hit["content"][0]["text"] == "Echo: recorded"
    assert "error" in miss and "never recorded" in miss["error"]

    for mode in ("legacy", "2026-07-28"):
        lenient = start_gateway(
            tmp_path / f"lenient-{mode}",
            CONFIG,
            "--mode",
            "replay",
            "--cassette",
            str(cassettes / "rec"),
            "--miss-as-tool-error",
        )
        try:
            hit, miss = calls(lenient, asked, mode=mode)
        finally:
            stop_gateway(lenient)
        assert hit["content"][0]["text"] == "Echo: recorded"
        assert miss["isError"] is True and "error" not in miss
        text = miss["content"][0]["text"]
        assert "never recorded" in text and "recorded" in text  # the miss names the nearest recorded call
    # Each replay session's call log (in its own --cassettes-dir, the played cassette being a path) calls it a miss.
    logs = sorted(tmp_path.glob("*/cassettes/rec/runs/*-replay"))
    assert len(logs) == 3
    for log in logs:
        assert [(r["outcome"], r["source"]) for r in iter_calls(log)] == [("ok", "recorded"), ("miss", "missed")]
