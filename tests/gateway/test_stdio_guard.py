"""`mcpgw serve --stdio` answers a line that is not one JSON-RPC message (gateway.stdio_guard).

The SDK's reader dropped such lines without a word: a request with a usable id and a
wrong shape left its client waiting forever. The gateway replays the default cassette
(real servers, recorded), spoken to as a raw client and as the SDK's stdio Client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT
from tests.gateway.test_bad_input import run

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
SUM = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
       "params": {"name": "everything__get-sum", "arguments": {"a": 1, "b": 2}}}


def serve_stdio(tmp_path) -> list[str]:
    return [sys.executable, "-m", "mcpgw.cli", "serve", "--stdio", "--cassettes-dir", str(tmp_path / "cassettes")]


def test_bad_lines_are_answered_and_the_session_goes_on(tmp_path):
    bad = ['garbage', '[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]',
           json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1]}),
           json.dumps({"jsonrpc": "1.0", "id": "four", "method": "ping"}),
           json.dumps({"jsonrpc": "2.0", "id": {}, "method": "ping"})]
    expected = {None: [-32700, -32600, -32600], 3: [-32602], "four": [-32600]}  # id -> error codes, in order

    async def go() -> tuple[dict, dict]:
        command = serve_stdio(tmp_path)
        async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            lines = [json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), *bad, json.dumps(SUM)]
            await process.stdin.send(("\n".join(lines) + "\n").encode())
            errors: dict = {}
            answers: dict = {}
            buffer = b""
            with anyio.fail_after(60):  # stdin stays open until every answer is in (EOF ends the session)
                while sum(map(len, errors.values())) < 5 or 9 not in answers:
                    buffer += await process.stdout.receive()
                    *complete, buffer = buffer.split(b"\n")
                    for raw in complete:
                        message = json.loads(raw)
                        if "error" in message:
                            errors.setdefault(message["id"], []).append(message["error"]["code"])
                            assert "\n" not in message["error"]["message"], message
                        else:
                            answers[message["id"]] = message["result"]
            await process.stdin.aclose()
            await process.wait()
        return errors, answers

    errors, answers = run(go)
    assert errors == expected
    assert answers[9]["content"][0]["text"] == "The sum of 1 and 2 is 3."


def test_sdk_clients_of_both_eras_are_still_served(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=serve_stdio(tmp_path)[1:], cwd=str(ROOT), env=dict(os.environ))

    async def go(era: str) -> str:
        with anyio.fail_after(60):
            async with Client(params, mode=era) as client:
                return (await client.call_tool("everything__get-sum", {"a": 1, "b": 2})).content[0].text

    for era in ("legacy", "2026-07-28"):
        assert run(lambda: go(era)) == "The sum of 1 and 2 is 3."
