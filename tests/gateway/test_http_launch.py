"""An HTTP entry's own command, for the gateway and its build check: started, waited for until its port listens,
stopped with its process group; a command that exits, or a port someone else holds, is one line."""

from __future__ import annotations

import json
import socket
import sys

import anyio
import pytest
from mcp import Client

from mcpgw.gateway.upstreams.http_launch import NotListening, serving
from mcpgw.lock.config import parse_config
from tests.conftest import FIXTURES, free_port, pid_alive, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run


def http_entry(port: int, *argv: str) -> object:
    text = (
        f'version: 1\nservers:\n  web:\n    transport: http\n    url: "http://127.0.0.1:{port}/mcp"\n'
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(list(argv))}\n"
    )
    return parse_config(text, "l.yaml").servers["web"]


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_serving_waits_for_the_port_and_stops_the_command(tmp_path):
    port = free_port()
    # a server that takes a moment before it listens, and writes its pid first
    script = (
        f"import http.server, os, time; open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid())); "
        f"time.sleep(0.5); http.server.HTTPServer(('127.0.0.1', {port}), http.server.BaseHTTPRequestHandler).serve_forever()"
    )
    spec = http_entry(port, "-c", script)

    async def go():
        async with serving(spec, timeout=30):
            return listening(port)

    assert run(go) is True
    pid = int((tmp_path / "pid").read_text())
    assert not pid_alive(pid) and not listening(port)


def test_a_command_that_exits_or_a_taken_port_is_one_line():
    port = free_port()

    async def go(spec):
        async with serving(spec, timeout=30):
            pass

    with pytest.raises(NotListening, match=f"exited \\(code 3\\) before listening on port {port}"):
        run(lambda: go(http_entry(port, "-c", "raise SystemExit(3)")))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(NotListening, match=f"port {port} is already in use by another process"):
            run(lambda: go(http_entry(port, "-c", "pass")))


@pytest.mark.real
def test_the_gateway_runs_an_http_entrys_command_and_stops_it(tmp_path):
    """As MCP-Bench runs Google Maps: an HTTP server the gateway starts itself, then reaches at its url.
    Here the real server-everything in its streamable HTTP mode, started by npx."""
    port = free_port()
    loopback = f"--require {FIXTURES / 'loopback.cjs'}"  # it would listen on every interface
    config = (
        f'version: 1\nservers:\n  web:\n    transport: http\n    url: "http://127.0.0.1:{port}/mcp"\n'
        f'    command: npx\n    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "streamableHttp"]\n'
        f'    env: {{PORT: "{port}", NODE_OPTIONS: "{loopback}"}}\n'
    )
    gateway = start_gateway(tmp_path, config, "--mode", "live")
    try:
        assert gateway.status()["servers"]["web"]["state"] == "ready", gateway.log()

        async def call() -> str:
            with anyio.fail_after(60):
                async with Client(gateway.url, mode="legacy") as client:
                    return (await client.call_tool("web__echo", {"message": "hi"})).content[0].text

        assert run(call) == "Echo: hi"
        assert listening(port)
    finally:
        stop_gateway(gateway)
    assert not listening(port)  # stopped with the gateway


def test_free_port_is_one_loopback_port_per_launch_in_url_args_env_and_headers():
    from mcpgw.gateway.errors.tree import ConfigError
    from mcpgw.gateway.upstreams.http_launch import with_free_port

    text = (
        'version: 1\nservers:\n  web:\n    transport: http\n    url: "http://127.0.0.1:${FREE_PORT}/mcp"\n'
        '    command: node\n    args: ["cli.js", "--port", "${FREE_PORT}"]\n    env: {PORT: "${FREE_PORT}"}\n'
        '    headers: {X-Port: "${FREE_PORT}"}\n'
    )
    spec = parse_config(text, "l.yaml").servers["web"]
    assert spec.env_required == ()  # not a variable the user must have
    launched = with_free_port(spec)
    port = launched.args[-1]
    assert port.isdigit() and not listening(int(port))
    assert launched.url == f"http://127.0.0.1:{port}/mcp" and launched.env_values == {"PORT": port}
    assert launched.headers == {"X-Port": port}
    assert spec.url.endswith(":${FREE_PORT}/mcp")  # the entry keeps the placeholder: every start picks again
    with pytest.raises(ConfigError, match="FREE_PORT"):  # nothing to give the port to
        parse_config(text.replace("    command: node\n", ""), "l.yaml")


def test_the_locks_google_maps_gets_a_free_port_and_says_it_binds_all_interfaces():
    """MCP-Bench starts it with `--port 3001`, on every interface: a second gateway lost it, and `mcpgw servers`
    did not say it was reachable from the network. Its command takes a port (no host): the port is picked."""
    from mcpgw.lock.config import load_config
    from tests.conftest import ROOT

    maps = load_config(ROOT / "servers.lock.yaml").servers["google_maps"]
    assert maps.url == "http://127.0.0.1:${FREE_PORT}/mcp" and maps.args[-2:] == ("--port", "${FREE_PORT}")
    assert "all_interfaces" in maps.flags


@pytest.mark.real
def test_two_gateways_each_start_the_same_http_entry_on_a_free_port(tmp_path):
    """The same entry in two gateways at once: each gets its own port; `all_interfaces` is shown by `mcpgw servers`."""
    import subprocess

    from tests.conftest import ROOT

    loopback = f"--require {FIXTURES / 'loopback.cjs'}"  # the test keeps it on loopback all the same
    config = (
        'version: 1\nservers:\n  web:\n    transport: http\n    url: "http://127.0.0.1:${FREE_PORT}/mcp"\n'
        '    command: npx\n    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "streamableHttp"]\n'
        f'    env: {{PORT: "${{FREE_PORT}}", NODE_OPTIONS: "{loopback}"}}\n    flags: [all_interfaces]\n'
    )
    first = start_gateway(tmp_path / "a", config, "--mode", "live")
    try:
        second = start_gateway(tmp_path / "b", config, "--mode", "live")
        try:
            for gateway in (first, second):
                info = gateway.server("web")
                assert info["state"] == "ready" and info["all_interfaces"] is True, gateway.log()
            table = subprocess.run(
                [sys.executable, "-m", "mcpgw.cli", "servers", "--url", second.base],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=30,
            )
            assert "binds all interfaces" in table.stdout and "web: listen(s) on all interfaces" in table.stdout
        finally:
            stop_gateway(second)
    finally:
        stop_gateway(first)
