"""A multi-server MCP-Bench task through the gateway as MCP-Bench's runner drives it, then `mcpgw eval --tasks-by session`.

The runner (mcp_modules/connector.py, server_manager_persistent.py) opens, for every task, one MCP session per
server of the task (its distraction servers too) at the endpoint `commands.json` gives it (`mcpgw connect mcpbench
--run`: one `?run=` for the whole run): an `initialize` (no `notifications/initialized`), a `tools/list`, then the
task's `tools/call`s, each on a fresh HTTP connection with the session's `mcp-session-id`. Every task's sessions
are opened before its first call. Counted a task per session, a two-server task was two one-server tasks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import misbehaving_entry

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def endpoints(gateway, tmp_path: Path) -> dict[str, str]:
    from mcpgw.cli import main

    out = tmp_path / "commands.json"
    assert main(["connect", "mcpbench", "--gateway", gateway.base, "--run", "mb", "-o", str(out)]) == 0
    return {name: gateway.base + entry["endpoint"] for name, entry in json.loads(out.read_text()).items()}


def open_session(url: str) -> str:
    """The runner's connector: initialize, keep the session id, list the tools (each on a connection of its own)."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "clientInfo": {"name": "mcp-benchmark", "version": "1.0.0"},
        },
    }
    with httpx.Client(timeout=30) as client:
        answer = client.post(url, json=init, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    with httpx.Client(timeout=30) as client:
        listed = client.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
            headers={**HEADERS, "mcp-session-id": session},
        )
    assert listed.status_code == 200 and "echo" in listed.text, listed.text
    return session


def call(url: str, session: str, message: str) -> None:
    """The runner's `_call_tool_http`: a fresh connection per call, request id 2, the session's id."""
    request = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": message}},
    }
    with httpx.Client(timeout=30) as client:
        answer = client.post(url, json=request, headers={**HEADERS, "mcp-session-id": session})
    assert answer.status_code == 200 and message in answer.text, answer.text


def test_a_two_server_task_is_one_task_with_two_servers(tmp_path, gateway_factory):
    config = "version: 1\nservers:\n" + "".join(misbehaving_entry(name) for name in ("alpha", "beta", "gamma"))
    gateway = gateway_factory(config, "--mode", "record")
    urls = endpoints(gateway, tmp_path)
    # Task 1 (alpha and beta, gamma a distraction server): round 1 calls alpha twice, round 2 beta twice.
    sessions = {name: open_session(urls[name]) for name in ("alpha", "beta", "gamma")}
    for message in ("a1", "a2"):
        call(urls["alpha"], sessions["alpha"], message)
    for message in ("b1", "b2"):
        call(urls["beta"], sessions["beta"], message)
    # Task 2 (alpha alone, beta a distraction): fresh sessions, one call.
    sessions = {name: open_session(urls[name]) for name in ("alpha", "beta")}
    call(urls["alpha"], sessions["alpha"], "a3")

    out = tmp_path / "eval.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "eval",
            "--cassette",
            str(gateway.cassettes / "test"),
            "--tasks-by",
            "session",
            "--format",
            "json",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["inputs"]["calls"] == 5 and report["inputs"]["runs"] == 2, report["inputs"]
    (rules,) = report["mcpbench_rules"].values()
    # What the runner reports for these two tasks: (4 + 1) / 2 calls and (2 + 1) / 2 servers a task.
    assert rules["overall"]["avg_tool_calls_per_task"] == 2.5, rules["overall"]
    assert rules["overall"]["avg_servers_used"] == 1.5, rules["overall"]
    servers = sorted(task["server_utilization_metrics"]["server_count"] for task in rules["tasks"].values())
    assert servers == [1, 2]
