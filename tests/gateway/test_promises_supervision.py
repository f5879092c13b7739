"""README promises about supervision, limits, run ids and HTTP answers, each checked once.

Two gateways for the whole module (one per set of flags), in front of the fixture server
(tests/fixtures/misbehaving_server.py) and a command that exits at start-up, so each test
costs a call or two: run ids from the `X-Run-Id` header and `calls export --run`, restart
backoff growth, the hard call limit, a per-server `timeout`, undeclared env vars kept from a
server, `--validate off`, `--responses sse|json`, and a broken config refused by `serve`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from mcpgw.gateway.errors.tree import UPSTREAM_TIMEOUT
from tests.conftest import ROOT, free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_bad_input import call, export, open_session

SECRET_NAME = "MCPGW_PROMISE_SECRET"
SECRET = "kept-from-undeclared-servers"


def config(starts_file: Path) -> str:
    # `flaky` exits at once every time it starts, noting the time: its restarts show the backoff.
    flaky = f"date +%s.%N >> {shlex.quote(str(starts_file))}; echo cannot start >&2; exit 3"
    return "version: 1\nservers:\n" + "".join(
        [
            misbehaving_entry("good"),
            misbehaving_entry("declared", extra=f"    env: [{SECRET_NAME}]\n"),
            misbehaving_entry("quick", extra="    timeout: 1\n"),
            misbehaving_entry("cached", extra="    flags: [offline]\n"),
            f'  flaky:\n    command: sh\n    args: ["-c", {json.dumps(flaky)}]\n',
        ]
    )


@pytest.fixture(scope="module")
def gateways(tmp_path_factory):
    """`main`: hard limit 2.5 s, silence limit 1.5 s, always SSE; `plain`: --validate off, always JSON."""
    tmp = tmp_path_factory.mktemp("promises")
    starts = tmp / "flaky-starts"
    os.environ[SECRET_NAME] = SECRET  # in the gateway's environment, as a user's shell would have it
    try:
        main = start_gateway(
            tmp / "main", config(starts), "--call-timeout", "1.5", "--max-call-timeout", "2.5", "--responses", "sse"
        )
        plain = start_gateway(tmp / "plain", config(tmp / "plain-starts"), "--validate", "off", "--responses", "json")
    finally:
        del os.environ[SECRET_NAME]
    main.starts = starts
    main.started_at = time.monotonic()
    yield main, plain
    stop_gateway(main)
    stop_gateway(plain)


def raw_call(gateway, name: str, arguments: dict, extra_headers: dict | None = None) -> httpx.Response:
    headers = {**open_session(gateway), **(extra_headers or {})}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx.post(gateway.url, json=body, headers=headers, timeout=30)


def test_run_id_from_header_and_calls_export_run(gateways, tmp_path):
    main, _ = gateways
    for run_id, message in (("header-run-a", "first"), ("header-run-b", "second"), ("header-run-a", "third")):
        response = raw_call(main, "good__echo", {"message": message}, {"X-Run-Id": run_id})
        assert response.status_code == 200 and f"echo: {message}" in response.text
    export(main, 3)
    out = tmp_path / "a.jsonl"
    exported = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "calls",
            "export",
            "test",
            "--run",
            "header-run-a",
            "--cassettes-dir",
            str(main.cassettes),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["arguments"]["message"] for r in records] == ["first", "third"]
    assert {r["run_id"] for r in records} == {"header-run-a"}
    assert "exported 2 call record(s)" in exported.stderr


def test_hard_limit_ends_a_call_that_keeps_reporting_progress(gateways):
    main, _ = gateways
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    started = time.monotonic()
    with pytest.raises(MCPError) as err:  # progress every second keeps the 1.5 s silence limit away
        call(main, "good__slow", {"seconds": 4}, progress_callback=on_progress)
    elapsed = time.monotonic() - started
    assert err.value.code == UPSTREAM_TIMEOUT and "2.5s in all" in err.value.message, err.value.message
    assert 2.4 < elapsed < 6 and len(seen) >= 2


def test_per_server_timeout_overrides_the_call_timeout(gateways):
    main, _ = gateways
    started = time.monotonic()
    with pytest.raises(MCPError) as err:
        call(main, "quick__hang", {})
    elapsed = time.monotonic() - started
    assert err.value.code == UPSTREAM_TIMEOUT and "limit 1s without progress" in err.value.message, err.value.message
    assert 0.9 < elapsed < 6  # the message names the server's 1 s limit, not the gateway's 1.5 s


def test_undeclared_env_vars_never_reach_a_server(gateways):
    main, _ = gateways
    assert call(main, "good__env", {"name": SECRET_NAME}).content[0].text == f"{SECRET_NAME}="
    assert call(main, "declared__env", {"name": SECRET_NAME}).content[0].text == f"{SECRET_NAME}={SECRET}"


def test_offline_servers_start_with_the_registries_switched_off(gateways):
    main, _ = gateways
    for name, value in (("UV_OFFLINE", "1"), ("npm_config_offline", "true")):
        assert call(main, "cached__env", {"name": name}).content[0].text == f"{name}={value}"
        if name not in os.environ:  # a server not flagged offline gets no such setting
            assert call(main, "good__env", {"name": name}).content[0].text == f"{name}="


def test_responses_sse_and_json(gateways):
    main, plain = gateways
    streamed = raw_call(main, "good__echo", {"message": "s"})
    assert streamed.headers["content-type"].startswith("text/event-stream") and "echo: s" in streamed.text
    plain_answer = raw_call(plain, "good__echo", {"message": "j"})
    assert plain_answer.headers["content-type"].startswith("application/json")
    assert plain_answer.json()["result"]["content"][0]["text"] == "echo: j"
    # json never streams, even when the request asks for progress: the answer simply comes at the end.
    headers = open_session(plain)
    body = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "tools/call",
        "params": {"name": "good__slow", "arguments": {"seconds": 0.4}, "_meta": {"progressToken": "p"}},
    }
    slow = httpx.post(plain.url, json=body, headers=headers, timeout=30)
    assert (
        slow.headers["content-type"].startswith("application/json")
        and slow.json()["result"]["content"][0]["text"] == "slept 0.4"
    )


def test_validate_off_forwards_and_logs_no_verdict(gateways):
    _, plain = gateways
    assert call(plain, "good__echo", {"message": 5}).content[0].text == "echo: 5"
    assert call(plain, "good__echo", {"mesage": "typo"}).content[0].text == "echo: None"  # forwarded unchecked
    records = [r for r in export(plain, 3) if r["tool"] == "echo"][-2:]
    assert [r["arguments"] for r in records] == [{"message": 5}, {"mesage": "typo"}] and all(
        r["validation"]["valid"] is None and not r["validation"]["errors"] for r in records
    )


def test_restart_backoff_doubles(gateways):
    """0.5 s, then 1 s, then 2 s between attempts (Settings.restart_backoff, doubling, capped)."""
    main, _ = gateways
    deadline = time.monotonic() + 15
    starts: list[float] = []
    while time.monotonic() < deadline:
        starts = [float(t) for t in main.starts.read_text().split()] if main.starts.exists() else []
        if len(starts) >= 4:
            break
        time.sleep(0.1)
    assert len(starts) >= 4, starts
    gaps = [b - a for a, b in zip(starts, starts[1:])][:3]
    # Each gap is the backoff delay plus the time a start takes to fail (well under a second here).
    for gap, delay in zip(gaps, (0.5, 1.0, 2.0)):
        assert delay - 0.05 < gap < delay + 0.9, gaps
    info = main.server("flaky")
    assert info["state"] in ("unavailable", "restarting", "starting") and info["restarts"] >= 3
    assert "cannot start" in (info["reason"] or "")


def test_broken_config_is_refused_by_serve_itself(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nservers:\n  ok:\n    command: x\n  bad:\n    command: y\n    timeout: -1\n")
    started = time.monotonic()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--config",
            str(broken),
            "--port",
            str(free_port()),
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert refused.returncode == 2 and time.monotonic() - started < 30
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith(f"mcpgw: {broken}:7:") and "timeout must be a positive, finite number" in line, (
        refused.stderr
    )
    assert not (tmp_path / "cassettes").exists()  # refused before anything started or was written
