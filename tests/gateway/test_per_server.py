"""Per-server endpoints (`/servers/<id>/mcp`) and the HTTP+SSE transport (`/sse`, `/servers/<id>/sse`),
against real servers (npx server-everything, uvx mcp-server-time) and real clients (the SDK's, in
both eras and over SSE; raw httpx as MCP-Bench's HTTP client posts).

A call through a server's endpoint and the same call through `/mcp` share one cassette key and one
call log (records differ only by `endpoint`), so each replays the other's recording, offline.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from mcpgw.evaluator.calllog import check_record
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run

pytestmark = pytest.mark.real

CONFIG = """version: 1
servers:
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
    flags: [stateless, nondeterministic]
"""
ZONES = ["UTC", "Europe/Paris", "Asia/Tokyo", "America/New_York", "Australia/Sydney", "Africa/Cairo"]
JSON_ONLY = {"Accept": "application/json", "Content-Type": "application/json"}
BOTH = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tool_call(name: str, arguments: dict, request_id: int = 2) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def sdk_calls(url: str, mode: str, steps: list[tuple[str, dict]]) -> tuple[list[str], list[dict]]:
    """The tools an SDK client lists at `url`, and each step's result as the client got it."""
    with anyio.fail_after(60):
        async with Client(url, mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            results = []
            for name, arguments in steps:
                result = await client.call_tool(name, arguments)
                results.append(result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}))
            return names, results


async def sse_calls(url: str, steps: list[tuple[str, dict]]) -> tuple[list[str], list[dict]]:
    """The same over the old HTTP+SSE transport, with the SDK's SSE client."""
    with anyio.fail_after(60):
        async with sse_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            results = []
            for name, arguments in steps:
                result = await session.call_tool(name, arguments)
                results.append(result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}))
            return names, results


def mcpbench_session(url: str) -> list[dict]:
    """As MCP-Bench's HTTP client discovers tools: initialize (2024-11-05), then tools/list on that session."""
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
    opened = httpx.post(url, json=init, headers=BOTH, timeout=60)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    listed = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        headers={**BOTH, "mcp-session-id": session},
        timeout=60,
    )
    body = (
        listed.json()
        if listed.headers["content-type"].startswith("application/json")
        else json.loads(next(line[6:] for line in listed.text.splitlines() if line.startswith("data: ")))
    )
    return body["result"]["tools"]


def sessionless(url: str, name: str, arguments: dict) -> dict:
    """As MCP-Bench posts each tools/call: a fresh connection, no session, `Accept: application/json` only."""
    with httpx.Client(timeout=60) as fresh:
        answer = fresh.post(url, json=tool_call(name, arguments), headers=JSON_ONLY)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json", answer.text
    return answer.json()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A recording gateway in front of everything + time, and the steps recorded through it:
    run `via-server` through `/servers/<id>/mcp`, run `via-mcp` through `/mcp`."""
    tmp = tmp_path_factory.mktemp("per-server")
    gateway = start_gateway(tmp, CONFIG, "--mode", "record", "--cassette", "rec")
    yield gateway, tmp
    stop_gateway(gateway)


def test_sdk_client_in_both_eras_sees_the_servers_own_names(recorded):
    gateway, _ = recorded
    served = gateway.status()["fast_path"]["served"]
    for mode in ("legacy", "2026-07-28"):
        names, results = run(
            lambda: sdk_calls(
                f"{gateway.base}/servers/everything/mcp?run=names-{mode}", mode, [("echo", {"message": "own names"})]
            )
        )
        assert "echo" in names and "get-sum" in names and not any("__" in n for n in names), names
        assert results[0]["content"][0]["text"] == "Echo: own names"
        merged, _ = run(lambda: sdk_calls(f"{gateway.url}?run=merged-{mode}", mode, []))
        assert sorted(names) == sorted(n.removeprefix("everything__") for n in merged if n.startswith("everything__"))
    assert gateway.status()["fast_path"]["served"] > served  # the per-server endpoint takes /mcp's fast path too
    time_names, _ = run(lambda: sdk_calls(f"{gateway.base}/servers/time/mcp?run=t", "legacy", []))
    assert sorted(time_names) == ["convert_time", "get_current_time"]
    # An unknown name on a server's endpoint names that server's nearest tools, under its own names.
    with httpx.Client(timeout=30) as fresh:
        wrong = fresh.post(
            f"{gateway.base}/servers/everything/mcp", json=tool_call("echoo", {}), headers=JSON_ONLY
        ).json()
    assert wrong["error"]["message"] == "Unknown tool 'echoo'; did you mean 'echo'?"


def test_sse_transport_per_server_and_for_all_servers(recorded):
    gateway, tmp = recorded
    names, results = run(
        lambda: sse_calls(f"{gateway.base}/servers/everything/sse?run=sse-one", [("echo", {"message": "over sse"})])
    )
    assert "echo" in names and not any("__" in n for n in names)
    assert results[0]["content"][0]["text"] == "Echo: over sse"
    names, results = run(lambda: sse_calls(f"{gateway.base}/sse", [("everything__get-sum", {"a": 2, "b": 3})]))
    assert "everything__echo" in names and "time__convert_time" in names
    assert "5" in results[0]["content"][0]["text"]
    log = list(iter_calls(tmp / "cassettes" / "rec"))
    tagged = [r for r in log if r["run_id"] == "sse-one"]
    assert [(r["endpoint"], r["exposed_name"], r["lane"]) for r in tagged] == [
        ("/servers/everything/sse", "everything__echo", "sse-one")
    ]
    untagged = [r for r in log if r["endpoint"] == "/sse"]
    assert len(untagged) == 1 and untagged[0]["lane"].startswith("default/client-sse-")  # the stream is the client


def test_record_through_one_endpoint_replay_through_the_other(recorded, tmp_path, monkeypatch):
    gateway, tmp = recorded
    steps = [
        ("get_current_time", {"timezone": "Asia/Tokyo"}),
        ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}),
    ]
    prefixed = [(f"time__{name}", arguments) for name, arguments in steps]
    everything = [("get-sum", {"a": 20, "b": 22}), ("echo", {"message": "both ways"})]
    first = {}
    for mode in ("legacy", "2026-07-28"):
        _, via_server = run(lambda: sdk_calls(f"{gateway.base}/servers/time/mcp?run=a-{mode}", mode, steps))
        _, via_mcp = run(lambda: sdk_calls(f"{gateway.url}?run=b-{mode}", mode, prefixed))
        _, sums = run(lambda: sdk_calls(f"{gateway.base}/servers/everything/mcp?run=c-{mode}", mode, everything))
        first[mode] = (via_server, via_mcp, sums)
    stop_gateway(gateway)  # the cassette is complete

    log = [r for r in iter_calls(tmp / "cassettes" / "rec") if r["run_id"].startswith(("a-", "b-"))]
    by_run = {run_id: [r for r in log if r["run_id"] == run_id] for run_id in {r["run_id"] for r in log}}
    same = lambda r: {
        k: v
        for k, v in r.items()
        if k
        not in (
            "endpoint",
            "run_id",
            "lane",
            "session_id",
            "session_opened",
            "seq",
            "started_at",  # noqa: E731
            "ended_at",
            "latency_ms",
            "upstream_ms",
            "result_digest",
        )
    }
    for mode in ("legacy", "2026-07-28"):
        a, b = by_run[f"a-{mode}"], by_run[f"b-{mode}"]
        assert [r["endpoint"] for r in a] == ["/servers/time/mcp"] * 2 and [r["endpoint"] for r in b] == ["/mcp"] * 2
        assert [same(r) for r in a] == [
            same(r) for r in b
        ]  # the same key, name, server, verdicts: only the endpoint differs
        assert a[1]["result_digest"] == b[1]["result_digest"]  # convert_time is deterministic
    for record in log:
        check_record(record, "log", None)  # the evaluator reads the new field without complaint

    # Replay with no way to start a server: each run through the other endpoint, byte-identical.
    monkeypatch.setenv("PATH", "/nonexistent")
    player = start_gateway(
        tmp_path,
        "version: 1\nservers:\n  x: {command: x}\n",
        "--mode",
        "replay",
        "--cassette",
        "rec",
        "--cassettes-dir",
        str(tmp / "cassettes"),
    )
    try:
        assert all(s["pid"] is None for s in player.status()["servers"].values())
        for mode in ("legacy", "2026-07-28"):
            via_server, via_mcp, sums = first[mode]
            _, replayed_mcp = run(lambda: sdk_calls(f"{player.url}?run=a-{mode}", mode, prefixed))
            _, replayed_server = run(lambda: sdk_calls(f"{player.base}/servers/time/mcp?run=b-{mode}", mode, steps))
            _, replayed_sums = run(
                lambda: sdk_calls(f"{player.url}?run=c-{mode}", mode, [(f"everything__{n}", a) for n, a in everything])
            )
            assert replayed_mcp == via_server and replayed_server == via_mcp and replayed_sums == sums, mode
            # ... and over SSE, from the same recording
            _, over_sse = run(lambda: sse_calls(f"{player.base}/servers/time/sse?run=a-{mode}", steps))
            assert over_sse == via_server
    finally:
        stop_gateway(player)
    replay_log = [
        r for r in iter_calls(next((tmp / "cassettes" / "rec" / "runs").iterdir())) if r["run_id"] == "a-legacy"
    ]
    assert {r["source"] for r in replay_log} == {"recorded"} and {r["outcome"] for r in replay_log} == {"ok"}
    assert sorted({r["endpoint"] for r in replay_log}) == ["/mcp", "/servers/time/sse"]


def test_mcpbench_style_sessionless_calls_in_shuffled_order_replay(tmp_path, monkeypatch):
    """Initialize once, then every tools/call sessionless on a fresh connection (`?run=` ties them to one
    lane); the parallel calls of a planning round are replayed in another order, at once."""
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "record", "--cassette", "bench")
    url = f"{gateway.base}/servers/time/mcp?run=round"
    try:
        assert sorted(t["name"] for t in mcpbench_session(url)) == ["convert_time", "get_current_time"]
        health = httpx.get(url, timeout=10)
        assert health.status_code == 200 and health.json()["state"] == "ready"
        recorded = {zone: sessionless(url, "get_current_time", {"timezone": zone}) for zone in ZONES}
        assert all("result" in answer and not answer["result"]["isError"] for answer in recorded.values()), recorded
    finally:
        stop_gateway(gateway)
    log = list(iter_calls(tmp_path / "cassettes" / "bench"))
    assert [(r["run_id"], r["lane"], r["endpoint"], r["tool"]) for r in log] == [
        ("round", "round", "/servers/time/mcp", "get_current_time")
    ] * len(ZONES)

    monkeypatch.setenv("PATH", "/nonexistent")
    player = start_gateway(
        tmp_path / "p",
        "version: 1\nservers:\n  x: {command: x}\n",
        "--mode",
        "replay",
        "--cassette",
        "bench",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
    )
    shuffled = ZONES[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != ZONES
    replayed: dict[str, dict] = {}

    async def one(zone: str) -> None:
        async with httpx.AsyncClient(timeout=60) as fresh:  # a connection of its own, as aiohttp's per call
            answer = await fresh.post(
                f"{player.base}/servers/time/mcp?run=round",
                json=tool_call("get_current_time", {"timezone": zone}),
                headers=JSON_ONLY,
            )
        replayed[zone] = answer.json()

    async def round_at_once() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for zone in shuffled:
                    tg.start_soon(one, zone)

    try:
        run(round_at_once)
    finally:
        stop_gateway(player)
    assert replayed == recorded


ROUTES = ["/servers/fx/mcp", "/servers/fx/sse", "/servers/fx/sse/messages", "/sse", "/sse/messages"]


def test_bad_input_on_the_new_routes(tmp_path):
    config = "version: 1\nservers:\n" + misbehaving_entry("fx") + "  broken:\n    command: /nonexistent/server-binary\n"
    gateway = start_gateway(tmp_path, config)
    try:
        for path in ROUTES:
            evil = httpx.get(gateway.base + path, headers={"Host": "evil.example"}, timeout=10)
            assert evil.status_code == 421 and "not allowed" in evil.json()["error"]["message"], path
            origin = httpx.get(gateway.base + path, headers={"Origin": "http://evil.example"}, timeout=10)
            assert origin.status_code == 403, path
        for path in ("/servers/fy/mcp", "/servers/fy/sse", "/servers/fy/sse/messages"):
            missing = httpx.post(gateway.base + path, json=tool_call("echo", {}), headers=JSON_ONLY, timeout=10)
            assert (
                missing.status_code == 404
                and missing.json()["error"]["message"] == "no server 'fy' behind this gateway; nearest: fx"
            ), path
        far = httpx.post(gateway.base + "/servers/zzz/mcp", json=tool_call("echo", {}), headers=JSON_ONLY, timeout=10)
        assert far.json()["error"]["message"] == "no server 'zzz' behind this gateway; servers: broken, fx"
        # The guard's body checks cover the new message paths.
        huge = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"m": "x" * (5 << 20)}},
        }
        for path in ("/servers/fx/mcp", "/sse/messages", "/servers/fx/sse/messages"):
            assert httpx.post(gateway.base + path, json=huge, headers=JSON_ONLY, timeout=30).status_code == 413
            nested = httpx.post(gateway.base + path, content=b"[" * 100 + b"]" * 100, headers=JSON_ONLY, timeout=10)
            assert nested.status_code == 400 and "nested deeper" in nested.json()["error"]["message"]
            plain = httpx.post(gateway.base + path, content=b"{}", headers={"Content-Type": "text/plain"}, timeout=10)
            assert plain.status_code == 415
        # A server that could not start: its endpoint says which and why, never an empty list.
        listed = httpx.post(
            gateway.base + "/servers/broken/mcp",
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            headers=JSON_ONLY,
            timeout=30,
        ).json()
        assert listed["error"]["message"] == (
            "server 'broken': not available (unavailable: command not found: '/nonexistent/server-binary')"
        )
        # Sessionless requests other than calls and lists need a session, said in one line.
        prompts = httpx.post(
            gateway.base + "/servers/fx/mcp",
            json={"jsonrpc": "2.0", "id": 4, "method": "prompts/list"},
            headers=JSON_ONLY,
            timeout=10,
        )
        assert prompts.status_code == 400 and prompts.json()["error"]["message"] == "Bad Request: Missing session ID"
        # The SSE stream takes GET only.
        assert (
            httpx.post(gateway.base + "/sse", json=tool_call("echo", {}), headers=JSON_ONLY, timeout=10).status_code
            == 405
        )
    finally:
        stop_gateway(gateway)


def test_every_new_route_wants_the_token(tmp_path):
    token = "per-server-token-0123456789"
    (tmp_path / "token").write_text(token)
    (tmp_path / "c.yaml").write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--config",
            str(tmp_path / "c.yaml"),
            "--port",
            str(port),
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--auth-token-file",
            str(tmp_path / "token"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # /readyz is open to probes
            try:
                if httpx.get(base + "/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "gateway did not start"
            time.sleep(0.1)
        for path in [*ROUTES, "/servers/unknown/mcp"]:
            for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}):
                for method in ("GET", "POST"):
                    answer = httpx.request(
                        method, base + path, json=tool_call("echo", {}), headers={**JSON_ONLY, **headers}, timeout=10
                    )
                    assert answer.status_code == 401, (path, method, answer.text)
                    assert "bearer token" in answer.json()["error"]["message"]
        with httpx.Client(timeout=60) as fresh:
            ok = fresh.post(
                base + "/servers/fx/mcp",
                json=tool_call("echo", {"message": "with a token"}),
                headers={**JSON_ONLY, "Authorization": f"Bearer {token}"},
            ).json()
        assert ok["result"]["content"][0]["text"] == "echo: with a token"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def test_calls_export_reads_logs_with_and_without_the_endpoint_field(tmp_path):
    """The embedded cassette's log predates the field; exports and the evaluator read both."""
    export = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "calls", "export", "default"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert export.returncode == 0, export.stderr
    old = [json.loads(line) for line in export.stdout.splitlines()]
    assert old and all("endpoint" not in r for r in old)
    for record in old:
        check_record(record, "old", None)


def test_stdio_calls_are_logged_with_endpoint_stdio(tmp_path):
    from mcp import StdioServerParameters

    (tmp_path / "c.yaml").write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "mcpgw.cli",
            "serve",
            "--stdio",
            "--config",
            str(tmp_path / "c.yaml"),
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--cassette",
            "s",
        ],
        cwd=str(ROOT),
    )
    _, results = run(
        lambda: sdk_calls(params, "legacy", [("echo", {"message": "over stdio"})])
    )  # one server: its own names
    assert results[0]["content"][0]["text"] == "echo: over stdio"
    assert [r["endpoint"] for r in iter_calls(tmp_path / "cassettes" / "s")] == ["stdio"]


def test_state_changing_calls_in_another_order_diverge_and_hybrid_goes_live(tmp_path, monkeypatch):
    """What the README tells users of servers that are not `stateless`: state-changing calls of one round
    replayed in another order than recorded miss, and the lane is refused from then on; hybrid goes live."""
    config = "version: 1\nservers:\n" + misbehaving_entry("fx")  # declares no statefulness: every call changes state
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "order")
    url = f"{recorder.base}/servers/fx/mcp?run=round"
    try:
        recorded = [sessionless(url, "echo", {"message": m}) for m in ("a", "b")]
    finally:
        stop_gateway(recorder)
    assert [r["result"]["content"][0]["text"] for r in recorded] == ["echo: a", "echo: b"]

    player = start_gateway(
        tmp_path / "p",
        config,
        "--mode",
        "replay",
        "--cassette",
        "order",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
    )
    try:
        in_order = [sessionless(f"{player.base}/servers/fx/mcp?run=same", "echo", {"message": m}) for m in ("a", "b")]
        swapped = [sessionless(f"{player.base}/servers/fx/mcp?run=swapped", "echo", {"message": m}) for m in ("b", "a")]
    finally:
        stop_gateway(player)
    assert in_order == recorded
    assert "replay miss" in swapped[0]["error"]["message"]
    assert "diverged from the recording" in swapped[1]["error"]["message"]

    hybrid = start_gateway(
        tmp_path / "h",
        config,
        "--mode",
        "hybrid",
        "--cassette",
        "order",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        "--log-cassette",
        "hlog",
    )
    try:
        live = [sessionless(f"{hybrid.base}/servers/fx/mcp?run=swapped", "echo", {"message": m}) for m in ("b", "a")]
    finally:
        stop_gateway(hybrid)
    assert [r["result"]["content"][0]["text"] for r in live] == ["echo: b", "echo: a"]
    assert [(r["endpoint"], r["source"]) for r in iter_calls(tmp_path / "cassettes" / "hlog")] == [
        ("/servers/fx/mcp", "live")
    ] * 2
