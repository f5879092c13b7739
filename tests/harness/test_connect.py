"""`mcpgw connect`: each format written from a running gateway (a replay of the embedded default cassette:
ten servers, no process) and used by what reads it: MCP-Bench's own config loader and HTTP connector (from
the pinned snapshot, in its own environment, PATH stripped) start the place-holding `cmd` and list each
server's tools at the endpoint; the mcpServers / VS Code files are opened with the SDK client, the token
in their headers; the mcprouter base URL answers mcprouter's calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.conftest import ROOT, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run
from tests.harness.test_mcpbench_runner import harness_python, unpack_harness

DEFAULT = ROOT / "cassettes" / "default"
FIXTURE = "version: 1\nservers:\n  unused:\n    command: /nonexistent\n"  # replay serves the cassette's own servers
TOKEN = "connect-test-gateway-token-0123456789"
# MCP-Bench's own code path for an HTTP entry: benchmark.runner maps it, mcp_modules.connector starts `cmd`
# in `cwd`, waits 3 s, checks it is alive, lists tools at http://localhost:<port><endpoint>, then stops it.
MCPBENCH_LOADER = """
import asyncio, json, sys
from types import SimpleNamespace
from benchmark.runner import BenchmarkRunner
from mcp_modules.connector import MCPConnector
from utils.local_server_config import LocalServerConfigLoader

async def one(name, servers, loader):
    config = BenchmarkRunner.map_server_name_to_config(SimpleNamespace(local_config_loader=loader), name, servers)
    connector = MCPConnector(name, config["command"], config["env"], config["cwd"], config["transport"],
                             config["port"], config["endpoint"])
    started = await connector.start_http_server()
    process = connector.server_process
    tools = await connector.discover_tools_http()
    await connector.stop_http_server()
    return {"started": started, "tools": sorted(tools), "exited": process.poll() is not None, "config": config}

async def main():
    loader = LocalServerConfigLoader()
    servers = loader.local_commands
    names = sys.argv[1:]
    results = await asyncio.gather(*(one(n, servers, loader) for n in names))
    print(json.dumps({"servers": sorted(servers), "results": dict(zip(names, results))}))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCPGW_TEST_TOKEN", TOKEN)
        running = start_gateway(
            tmp_path_factory.mktemp("connect"),
            FIXTURE,
            "--mode",
            "replay",
            "--cassette",
            str(DEFAULT),
            "--log-cassette",
            "log",
            "--auth-token-env",
            "MCPGW_TEST_TOKEN",
            token=TOKEN,
        )
    yield running
    stop_gateway(running)


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory):
    """No token: MCP-Bench's HTTP client sends no Authorization header (a loopback gateway needs none)."""
    running = start_gateway(
        tmp_path_factory.mktemp("connect-open"),
        FIXTURE,
        "--mode",
        "replay",
        "--cassette",
        str(DEFAULT),
        "--log-cassette",
        "log",
    )
    yield running
    stop_gateway(running)


def connect(base: str, *args: str, token: bool = False) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "MCPGW_TEST_TOKEN": TOKEN}
    more = ["--auth-token-env", "MCPGW_TEST_TOKEN"] if token else []
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "connect", *args, "--gateway", base, *more],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


async def tools_at(url: str, headers: dict[str, str] | None) -> list[str]:
    with anyio.fail_after(30):
        async with create_mcp_http_client(headers=headers) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize("kind", ["mcpservers", "vscode"])
def test_client_files_point_at_live_endpoints(gateway, tmp_path, kind):
    status = gateway.status()["servers"]
    shared = connect(gateway.base, kind, "--run", "cfg", "-o", str(tmp_path / "one.json"), token=True)
    per = connect(gateway.base, kind, "--per-server", "-o", str(tmp_path / "per.json"), token=True)
    assert shared.returncode == 0 and per.returncode == 0, shared.stderr + per.stderr
    key = "servers" if kind == "vscode" else "mcpServers"
    # The token is not in the files: each names it the way its client looks a secret up.
    assert TOKEN not in (tmp_path / "one.json").read_text() + (tmp_path / "per.json").read_text()
    assert "token is not in the file" in shared.stderr
    written = json.loads((tmp_path / "one.json").read_text())
    one = written[key]
    assert list(one) == ["mcpgw"] and one["mcpgw"]["url"] == gateway.base + "/mcp?run=cfg"
    reference = "${input:mcpgw-token}" if kind == "vscode" else "${env:MCPGW_TEST_TOKEN}"
    assert one["mcpgw"]["headers"] == {"Authorization": f"Bearer {reference}"}
    if kind == "vscode":
        assert one["mcpgw"]["type"] == "http"
        assert written["inputs"] == [
            {"type": "promptString", "id": "mcpgw-token", "description": "mcpgw gateway token", "password": True}
        ]
    expanded = {"Authorization": f"Bearer {TOKEN}"}  # what the client sends once it has looked the reference up
    names = run(lambda: tools_at(one["mcpgw"]["url"], expanded))
    assert len(names) == sum(s["exposed_tools"] for s in status.values()) and all("__" in n for n in names)

    entries = json.loads((tmp_path / "per.json").read_text())[key]
    assert sorted(entries) == sorted(status)
    for sid in ("unit_converter", "memory"):
        assert entries[sid]["url"] == f"{gateway.base}/servers/{sid}/mcp"
        assert entries[sid]["headers"] == {"Authorization": f"Bearer {reference}"}
        own = run(lambda sid=sid: tools_at(entries[sid]["url"], expanded))
        assert len(own) == status[sid]["exposed_tools"] and not any("__" in n for n in own)  # its own names
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    for headers, status_code in (({}, 401), (expanded, 200)):  # the token it refers to opens it
        answer = httpx.post(entries["memory"]["url"], json=init, headers={**accept, **headers}, timeout=30)
        assert answer.status_code == status_code, answer.text


def test_the_token_goes_into_a_file_only_when_asked_and_then_loudly(gateway, tmp_path):
    literal = connect(gateway.base, "mcpservers", "--token-in-file", "-o", str(tmp_path / "t.json"), token=True)
    assert literal.returncode == 0, literal.stderr
    entry = json.loads((tmp_path / "t.json").read_text())["mcpServers"]["mcpgw"]
    assert entry["headers"] == {"Authorization": f"Bearer {TOKEN}"}
    assert f"WARNING: {tmp_path / 't.json'} holds the gateway's bearer token in plain text" in literal.stderr


def test_mcpbench_against_a_token_protected_gateway_warns_that_its_runner_cannot_send_one(gateway, tmp_path):
    done = connect(gateway.base, "mcpbench", "-o", str(tmp_path / "commands.json"), token=True)
    assert done.returncode == 0, done.stderr
    assert "WARNING: this gateway wants a bearer token, and MCP-Bench's runner cannot send one" in done.stderr
    assert TOKEN not in (tmp_path / "commands.json").read_text()


def test_mcprouter_base_url_answers_mcprouters_calls(gateway):
    printed = connect(gateway.base, "mcprouter", token=True)
    assert printed.returncode == 0 and printed.stdout == gateway.base + "/v1\n"
    url = printed.stdout.strip()
    listed = httpx.post(url + "/list-servers", json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()
    assert listed["code"] == 0 and sorted(s["server_key"] for s in listed["data"]["servers"]) == sorted(
        gateway.status()["servers"]
    )


def test_a_run_goes_into_the_base_urls_path_for_the_api_and_the_model(gateway):
    """Issue 41 item 4: clients that append their own paths (mcprouter's, OpenAI's, AzureOpenAI's) keep a run id
    only in the base URL's path: `/runs/<id>/...` tags every request under it."""
    tagged = connect(gateway.base, "mcprouter", "--run", "r/9", token=True)
    assert tagged.returncode == 0 and tagged.stdout == gateway.base + "/runs/r%2F9/v1\n"
    assert f"model (OpenAI base_url): {gateway.base}/runs/r%2F9/v1" in tagged.stderr
    assert f"azure_endpoint, e.g. MCP-Bench's AZURE_OPENAI_ENDPOINT): {gateway.base}/runs/r%2F9" in tagged.stderr
    call = {
        "server": "time",
        "name": "convert_time",
        "arguments": {"source_timezone": "America/Los_Angeles", "time": "09:30", "target_timezone": "Europe/Berlin"},
    }
    answer = httpx.post(
        tagged.stdout.strip() + "/call-tool", json=call, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    ).json()
    assert answer["code"] == 0, answer
    from mcpgw.recorder.calllog import iter_calls

    logged = [r for r in iter_calls(gateway.cassettes / "log") if r.get("endpoint") == "/v1/call-tool"]
    assert logged and logged[-1]["run_id"] == "r/9", logged[-1:]


def test_bad_requests_get_one_line(gateway, tmp_path):
    unknown = connect(gateway.base, "mcpservers", "--servers", "unit_convertor", token=True)
    assert (
        unknown.returncode != 0
        and "did you mean 'unit_converter'" in unknown.stderr
        and "Traceback" not in unknown.stderr
    )
    nobody = connect("http://127.0.0.1:9", "mcpbench")
    assert nobody.returncode != 0 and "no gateway answering" in nobody.stderr and "Traceback" not in nobody.stderr
    refused = connect(gateway.base, "mcpservers")  # the gateway wants its token
    assert refused.returncode != 0 and "Traceback" not in refused.stderr


def test_mcpbench_commands_json_through_mcpbenchs_own_loader_and_connector(open_gateway, tmp_path):
    harness = unpack_harness(tmp_path)
    target = harness / "mcp_servers" / "commands.json"
    wrote = connect(
        open_gateway.base, "mcpbench", "--run", "mb-7", "--servers", "unit_converter", "memory", "-o", str(target)
    )
    assert wrote.returncode == 0, wrote.stderr
    commands = json.loads(target.read_text())
    assert sorted(commands) == ["Memory", "Unit Converter"]  # MCP-Bench's names for them (the lock's titles)
    entry = commands["Unit Converter"]
    assert entry["transport"] == "http" and entry["port"] == int(open_gateway.base.rsplit(":", 1)[1])
    assert entry["endpoint"] == "/servers/unit_converter/mcp?run=mb-7" and entry["env"] == []
    assert Path(entry["cmd"].split()[0]).is_absolute()

    loaded = subprocess.run(
        [str(harness_python()), "-c", MCPBENCH_LOADER, "Unit Converter", "Memory"],
        cwd=harness,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/nonexistent", "HOME": str(tmp_path)},
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    out = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert out["servers"] == ["Memory", "Unit Converter"]
    status = open_gateway.status()["servers"]
    for name, sid in (("Unit Converter", "unit_converter"), ("Memory", "memory")):
        result = out["results"][name]
        assert result["started"] and result["exited"], result  # the place-holder ran with PATH stripped, and stopped
        assert len(result["tools"]) == status[sid]["exposed_tools"] and all(
            t.startswith(f"{name}:") for t in result["tools"]
        )
