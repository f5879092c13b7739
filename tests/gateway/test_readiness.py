"""The ready gate: until every server's first start has settled, list requests wait instead of
answering a partial catalog (HTTP and stdio, both protocol eras), bounded by --ready-timeout;
/healthz answers at once and /readyz only says 200 once settled. Also: an optional list a server
refuses does not make it unavailable, and Ctrl-C during start-up exits promptly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import MISBEHAVING, ROOT, free_port
from tests.gateway.test_bad_input import run

ERAS = ("legacy", "2026-07-28")
SLOW = 4.0  # seconds the slow server takes to answer initialize


def lock(slow_delay: float = SLOW, extra: str = "") -> str:
    def entry(name: str, *flags: str) -> str:
        args = ", ".join(f'"{a}"' for a in [MISBEHAVING[1], *flags])
        return f'  {name}:\n    command: "{MISBEHAVING[0]}"\n    args: [{args}]\n'

    return (
        "version: 1\nservers:\n"
        + entry("fast")
        + entry("slow", "--start-delay", str(slow_delay))
        + entry("no_templates", "--resources-without-templates")
        + extra
    )


def serve_args(tmp_path: Path, config: str, *extra: str) -> list[str]:
    path = tmp_path / "servers.lock.yaml"
    path.write_text(config)
    return [
        sys.executable,
        "-m",
        "mcpgw.cli",
        "serve",
        "--config",
        str(path),
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--cassette",
        "gate",
        *extra,
    ]


def start_http(tmp_path: Path, config: str, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(tmp_path / "gateway.log", "w")
    process = subprocess.Popen(
        serve_args(tmp_path, config, "--port", str(port), *extra),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, (tmp_path / "gateway.log").read_text()
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.05)
    stop(process)
    raise AssertionError("gateway never answered /healthz")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


async def first_list(target, mode: str) -> tuple[list[str], float]:
    """The client's very first tools/list, and how long it took."""
    with anyio.fail_after(60):
        async with Client(target, mode=mode) as client:
            started = time.monotonic()
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            return tools, time.monotonic() - started


@pytest.mark.parametrize("mode", ERAS)
def test_http_lists_wait_for_every_first_start(tmp_path, mode):
    process, base = start_http(tmp_path, lock())
    try:
        ready = httpx.get(base + "/readyz", timeout=5)
        assert ready.status_code == 503 and "slow" in ready.json()["starting"]  # /healthz was 200 already
        tools, waited = run(lambda: first_list(base + "/mcp", mode))
        assert httpx.get(base + "/readyz", timeout=5).status_code == 200
        status = httpx.get(base + "/status", timeout=5).json()
    finally:
        stop(process)
    assert "slow__echo" in tools and "fast__echo" in tools and "no_templates__echo" in tools
    assert waited > 0.5  # it waited for the slow server rather than answering without it
    # A server that declares resources but refuses resources/templates/list is still ready.
    assert status["servers"]["no_templates"]["state"] == "ready", status["servers"]["no_templates"]
    assert "resources/templates/list failed (-32601" in status["servers"]["no_templates"]["list_problems"][0]


@pytest.mark.parametrize("mode", ERAS)
def test_stdio_first_list_is_complete(tmp_path, mode):
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(tmp_path, lock(), "--stdio")[1:], cwd=str(ROOT), env=dict(os.environ)
    )
    tools, _ = run(lambda: first_list(params, mode))
    assert {"fast__echo", "slow__echo", "no_templates__echo"} <= set(tools)


def test_ready_timeout_bounds_the_wait(tmp_path):
    process, base = start_http(tmp_path, lock(slow_delay=60), "--ready-timeout", "2")
    try:
        tools, waited = run(lambda: first_list(base + "/mcp", "legacy"))
        ready = httpx.get(base + "/readyz", timeout=5)
    finally:
        stop(process)
    assert "fast__echo" in tools and "slow__echo" not in tools
    assert waited < 15
    assert ready.status_code == 200  # settled by the timeout, with slow still starting


def test_ctrl_c_during_start_up_exits_promptly_and_a_second_one_forces(tmp_path):
    for presses in (1, 2):
        process, _ = start_http(tmp_path, lock(slow_delay=60))
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        if presses == 2:
            time.sleep(0.2)
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        finally:
            stop(process)
        assert time.monotonic() - started < 15, f"{presses} Ctrl-C: still running"


def test_per_server_endpoint_waits_for_its_server_then_says_why(tmp_path):
    """A call on /servers/slow/mcp sent while slow is still starting waits for it (without the wait it
    would fail: a starting server is not available); past --ready-timeout it names the server and its state."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "late"}},
    }
    headers = {"accept": "application/json", "content-type": "application/json"}
    process, base = start_http(tmp_path, lock())
    try:
        assert "slow" in httpx.get(base + "/readyz", timeout=5).json()["starting"]
        answer = httpx.post(base + "/servers/slow/mcp?run=r", json=call, headers=headers, timeout=60).json()
    finally:
        stop(process)
    assert answer["result"]["content"][0]["text"] == "echo: late", answer

    (tmp_path / "t").mkdir()
    process, base = start_http(tmp_path / "t", lock(slow_delay=60), "--ready-timeout", "2")
    try:
        listed = httpx.post(
            base + "/servers/slow/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers=headers,
            timeout=60,
        ).json()
    finally:
        stop(process)
    assert listed["error"]["message"] == "server 'slow': not available (starting: no reason given)", listed


def test_start_up_says_which_servers_it_still_waits_for(tmp_path):
    process, base = start_http(tmp_path, lock(slow_delay=7.0))
    try:
        deadline = time.monotonic() + 60
        while httpx.get(base + "/readyz", timeout=5).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        stop(process)
    log = (tmp_path / "gateway.log").read_text()
    assert (
        "mcpgw: waiting for 1 of 3 server(s) to start after 5s: slow (lists wait for them, at most "
        "--ready-timeout 180s)"
    ) in log, log
