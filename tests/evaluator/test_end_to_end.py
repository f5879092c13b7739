"""Record runs through a real `mcpgw serve`, export the call log, then audit and evaluate it.

The upstream is the test fixture server (`tests/fixtures/misbehaving_server.py`),
so nothing leaves the machine. Commands run as a user would type them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import mcp
import pytest
from mcp.shared.exceptions import MCPError

from mcpgw.gateway.errors.tree import UPSTREAM_TIMEOUT
from tests.conftest import ROOT, misbehaving_entry, stop_gateway

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("good")


def call_tool(url: str, name: str, arguments: dict) -> str:
    """ "ok", "error" (an isError result) or "error <code>: <message>" for a JSON-RPC error the gateway
    answered. Anything else (a dead gateway, a client timeout) propagates and fails the test."""

    async def go():
        with anyio.fail_after(30):
            async with mcp.Client(url, mode="legacy") as client:
                try:
                    result = await client.call_tool(name, arguments)
                except MCPError as exc:
                    return f"error {exc.code}: {exc.message}"
                return "error" if result.is_error else "ok"

    try:
        return anyio.run(go)
    except BaseExceptionGroup as group:  # the task group's wrapper: surface the real failure
        raise group.exceptions[0] from None


def mcpgw(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_record_export_audit_and_report(gateway_factory, tmp_path):
    gateway = gateway_factory(CONFIG, "--call-timeout", "1.5")
    first, second = gateway.url + "?run=task-1", gateway.url + "?run=task-2"
    assert call_tool(first, "good__echo", {"message": "hi"}) == "ok"
    call_tool(first, "good__echo", {"message": 5})  # invalid type (audit mode: forwarded)
    near_miss = call_tool(first, "good__ecoh", {"message": "hi"})
    assert near_miss.startswith("error ") and "Unknown tool 'good__ecoh'" in near_miss and "'good__echo'" in near_miss
    timed_out = call_tool(second, "good__hang", {})  # the gateway's 1.5 s limit, not the client's 30 s
    assert timed_out.startswith(f"error {UPSTREAM_TIMEOUT}:") and "no answer to tools/call" in timed_out, timed_out
    assert call_tool(second, "good__echo", {"message": "again"}) == "ok"
    stop_gateway(gateway)

    calls = tmp_path / "calls.jsonl"
    exported = mcpgw("calls", "export", "test", "--cassettes-dir", str(gateway.cassettes), "-o", str(calls))
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in calls.read_text().splitlines()]
    assert {r["run_id"] for r in records} == {"task-1", "task-2"}

    audit_json = tmp_path / "audit.json"
    audited = mcpgw(
        "audit", "--calls", str(calls), "--format", "json", "-o", str(audit_json), "--fail-under", "validity=0.9"
    )
    assert audited.returncode == 1 and "good/echo: validity" in audited.stderr  # 1 of 3 echo calls invalid
    rows = {r["tool"]: r for r in json.loads(audit_json.read_text())["tools"]}
    assert rows["echo"]["calls"] == 3 and rows["echo"]["invalid_by_keyword"] == {"type": 1}
    assert rows["echo"]["near_misses"] == 1 and rows["hang"]["timeouts"] == 1

    report = tmp_path / "report.html"
    evaluated = mcpgw("eval", "--cassette", str(gateway.cassettes / "test"), "--format", "html", "-o", str(report))
    assert evaluated.returncode == 0, evaluated.stderr
    html = report.read_text()
    assert "<svg" in html and "good/echo" in html and "Traceback" not in evaluated.stderr
    as_json = mcpgw("eval", "--calls", str(calls), "--format", "json")
    rules = json.loads(as_json.stdout)["mcpbench_rules"]
    (per_model,) = rules.values()
    task1 = per_model["tasks"]["task-1"]
    assert task1["valid_tool_name_rate"] == pytest.approx(2 / 3) and task1["input_schema_compliance"] == 0.5
