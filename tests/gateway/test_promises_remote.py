"""README promises about remote upstreams, naming and the 2026-07-28 era, against real servers.

One gateway for the module, `--naming benchmark`, in front of three remote upstreams started
as a user would: npm `server-everything` in `streamableHttp` mode and in `sse` mode, and
another `mcpgw serve` reached with a header whose value is expanded from `${VAR}` (the upstream
gateway's call log shows what arrived). Node servers listen on every interface by default;
tests/fixtures/loopback.cjs keeps them on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import FIXTURES, ROOT, free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_bad_input import export, run
from tests.gateway.test_real_servers import list_and_convert_over_stdio

pytestmark = pytest.mark.real

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
TOKEN_VAR = "MCPGW_PROMISE_TOKEN"
TOKEN = "tok-4b1d"


def start_node_server(mode: str, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "NODE_OPTIONS": f"{os.environ.get('NODE_OPTIONS', '')} --require {FIXTURES / 'loopback.cjs'}".strip(),
    }
    process = subprocess.Popen(
        ["npx", "-y", EVERYTHING, mode], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server-everything {mode} exited: {log.read_text()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, port
        time.sleep(0.1)
    stop_process(process)
    raise AssertionError(f"server-everything {mode} never listened on {port}: {log.read_text()}")


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remote")
    processes = []
    gateways = []
    try:
        http, http_port = start_node_server("streamableHttp", tmp / "http.log")
        processes.append(http)
        sse, sse_port = start_node_server("sse", tmp / "sse.log")
        processes.append(sse)
        upstream = start_gateway(tmp / "upstream", "version: 1\nservers:\n" + misbehaving_entry("fx"))
        gateways.append(upstream)
        config = f"""version: 1
servers:
  ehttp:
    title: "Everything HTTP"
    transport: http
    url: http://127.0.0.1:{http_port}/mcp
  esse:
    title: "Everything SSE"
    transport: sse
    url: http://127.0.0.1:{sse_port}/sse
  relay:
    title: "Relay"
    transport: http
    url: {upstream.url}
    headers: {{X-Run-Id: "hdr-${{{TOKEN_VAR}}}"}}
"""
        os.environ[TOKEN_VAR] = TOKEN
        try:
            gateway = start_gateway(tmp / "front", config, "--naming", "benchmark")
        finally:
            del os.environ[TOKEN_VAR]
        gateways.append(gateway)
        gateway.upstream = upstream
        yield gateway
    finally:
        for gateway in reversed(gateways):
            stop_gateway(gateway)
        for process in processes:
            stop_process(process)


def test_streamable_http_and_sse_upstreams_under_benchmark_names(remote):
    status = remote.status()["servers"]
    assert {name: s["state"] for name, s in status.items()} == {"ehttp": "ready", "esse": "ready", "relay": "ready"}

    async def go():
        with anyio.fail_after(60):
            async with Client(remote.url, mode="legacy") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                over_http = await client.call_tool("Everything HTTP:echo", {"message": "over http"})
                over_sse = await client.call_tool("Everything SSE:get-sum", {"a": 2, "b": 40})
                return names, over_http, over_sse

    names, over_http, over_sse = run(go)
    assert {"Everything HTTP:echo", "Everything SSE:echo", "Relay:fx__echo"} <= names
    assert over_http.content[0].text == "Echo: over http"
    assert "42" in over_sse.content[0].text


def test_prompts_under_benchmark_naming(remote):
    async def go():
        with anyio.fail_after(60):
            async with Client(remote.url, mode="legacy") as client:
                prompts = {p.name for p in (await client.list_prompts()).prompts}
                got = await client.get_prompt("Everything HTTP:args-prompt", {"city": "Lyon", "state": "Rhône"})
                return prompts, got

    prompts, got = run(go)
    assert {"Everything HTTP:simple-prompt", "Everything SSE:args-prompt"} <= prompts
    assert not any("__" in name for name in prompts)
    assert "Lyon" in got.messages[0].content.text


def test_header_values_expand_env_vars(remote):
    assert run_relay(remote, "through two gateways") == "echo: through two gateways"
    # The upstream gateway takes the run id from X-Run-Id: the value arrived expanded.
    (record,) = [r for r in export(remote.upstream, 1) if r["tool"] == "echo"]
    assert record["run_id"] == f"hdr-{TOKEN}"
    # A header built from an env var is a secret: its value never reaches the front's cassette.
    front = remote.cassettes / "test"
    assert all(TOKEN.encode() not in p.read_bytes() for p in front.iterdir())


def run_relay(gateway, message: str) -> str:
    async def go():
        with anyio.fail_after(60):
            async with Client(gateway.url, mode="legacy") as client:
                return (await client.call_tool("Relay:fx__echo", {"message": message})).content[0].text

    return run(go)


def test_2026_clients_get_completion_and_handshake_only_features_say_so(remote):
    """README: logging, resource subscriptions, sampling, elicitation and roots are handshake-era only."""
    from mcp_types import PromptReference

    async def go():
        with anyio.fail_after(60):
            async with Client(remote.url, mode="2026-07-28") as client:
                completion = await client.complete(
                    PromptReference(type="ref/prompt", name="Everything HTTP:completable-prompt"),
                    {"name": "department", "value": "Eng"},
                )
                elicited = await client.call_tool("Everything HTTP:trigger-elicitation-request", {})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the SDK marks logging deprecated in 2026-07-28
                    try:
                        await client.set_logging_level("debug")
                        level = "accepted"
                    except MCPError as exc:
                        level = exc.message
                return completion, elicited, level

    completion, elicited, level = run(go)
    assert "Engineering" in completion.completion.values
    # The server's elicitation/create finds no handshake-era caller to relay to: a clear error, no hang.
    assert elicited.is_error and "elicitation/create" in elicited.content[0].text
    assert "handshake-era clients only" in elicited.content[0].text  # says why, not "no call in flight"
    assert level == "Method not found"


def test_2026_client_over_stdio(tmp_path):
    config = tmp_path / "servers.yaml"
    config.write_text(
        "version: 1\nservers:\n  time:\n    command: uvx\n"
        '    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]\n'
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "mcpgw.cli",
            "serve",
            "--stdio",
            "--config",
            str(config),
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--cassette",
            "stdio26",
        ],
        cwd=str(ROOT),
        env=dict(os.environ),
    )

    tools, tokyo = run(lambda: list_and_convert_over_stdio(params, "2026-07-28"))
    assert sorted(tools) == ["convert_time", "get_current_time"]
    assert tokyo.endswith("21:00:00+09:00")
    (record,) = list(iter_calls(tmp_path / "cassettes" / "stdio26"))
    assert record["protocol_version"] == "2026-07-28" and record["outcome"] == "ok"
