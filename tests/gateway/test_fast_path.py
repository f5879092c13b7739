"""The fast path answers exactly as the SDK's path does: same bodies, same errors, same call log.

The same request sequence goes through the real HTTP front twice, in process: once with the
fast path off (every request through the SDK), once with it on. Upstreams are handler doubles.
"""

from __future__ import annotations

import json
import re

import anyio
import httpx
import pytest

from mcpgw.cassette.store import CassetteStore
from mcpgw.gateway.encoding.result_memo import ResultMemo
from mcpgw.gateway.errors.tree import UpstreamRejected
from mcpgw.gateway.mcp_server import build_http_app, build_server
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import HandlerUpstream
from mcpgw.lock.config import ServerSpec
from mcpgw.recorder.calllog import CallLog, iter_calls

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
OUTPUT = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}


REPLAYED = ResultMemo()
REPLAYED_RESULT = {"content": [{"type": "text", "text": 'recorded "answer" é\n'}], "isError": False}


async def answer(method, params):
    args = params["arguments"]
    if params["name"] == "boom":
        raise UpstreamRejected("alpha", -32000, "upstream refused", {"why": "test"})
    if params["name"] == "structured":
        return {"content": [{"type": "text", "text": "s"}], "structuredContent": {"sum": "not an int"}}
    if (
        params["name"] == "replayed"
    ):  # one result object answered every time, as a replay's (gateway.encoding.result_memo)
        return REPLAYED.mark(REPLAYED_RESULT).result
    return {"content": [{"type": "text", "text": f"{params['name']}:{json.dumps(args, sort_keys=True)} é"}]}


def make_app(tmp_path, name, monkeypatch, enabled, response_mode="adaptive"):
    monkeypatch.setenv("MCPGW_FAST_PATH", "on" if enabled else "off")
    catalog = ServerCatalog(
        {"capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}},
        tools=[
            {"name": "add", "inputSchema": SCHEMA},
            {"name": "boom", "inputSchema": SCHEMA},
            {"name": "structured", "inputSchema": {"type": "object"}, "outputSchema": OUTPUT},
            {"name": "replayed", "inputSchema": {"type": "object"}},
        ],
    )
    spec = ServerSpec("alpha", "stdio", "x", title="Alpha")
    store = CassetteStore(tmp_path / name)
    router = Router(
        [spec],
        {"alpha": HandlerUpstream("alpha", answer, catalog)},
        Settings(validate="enforce", naming="prefix"),
        CallLog(store),
    )
    server = build_server(router)
    return build_http_app(router, server, "127.0.0.1", response_mode=response_mode), server, store


def lifespan(app):
    """The Starlette app's lifespan, found inside the ASGI layers build_http_app wraps it in."""
    inner = app
    while not hasattr(inner, "router"):
        inner = inner.app
    return inner.router.lifespan_context(inner)


def requests_sequence():
    hot = [
        ("tools/list", None, {}),
        ("tools/list", {}, {}),
        ("ping", None, {}),
        ("ping", {}, {}),
        ("tools/call", {"name": "alpha__add", "arguments": {"x": 1}}, {}),
        ("tools/call", {"name": "alpha__add", "arguments": {"x": 2}}, {"x-run-id": "run-7"}),
        ("tools/call", {"name": "alpha__add", "arguments": {"x": "two"}}, {}),  # invalid: rejected as a tool result
        ("tools/call", {"name": "alpha__ad", "arguments": {"x": 1}}, {}),  # unknown tool: JSON-RPC error
        ("tools/call", {"name": "alpha__boom", "arguments": {"x": 1}}, {}),  # upstream error with data
        ("tools/call", {"name": "alpha__structured", "arguments": {}}, {}),  # output validation verdict
        ("tools/call", {"name": "alpha__add"}, {}),  # no arguments
        ("tools/list", {"cursor": "nope"}, {}),  # bad cursor: error
        ("tools/call", {"name": "alpha__add", "arguments": {"x": 3}, "_meta": {"trace": "t1"}}, {}),
        ("tools/call", {"name": "alpha__replayed", "arguments": {}}, {}),  # its answer's JSON made here ...
        ("tools/call", {"name": "alpha__replayed", "arguments": {}}, {}),  # ... and reused here
    ]
    malformed = [  # the SDK's path answers these, fast path on or off
        ("tools/call", {"arguments": {"x": 1}}, {}),
        ("tools/call", {"name": 7}, {}),
        ("tools/call", {"name": "alpha__add", "arguments": {"x": 4}, "_meta": {"progressToken": "p"}}, {}),
    ]
    return hot, malformed


async def drive(app, session_query=""):
    transcript = []
    async with lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            init = await client.post(
                "/mcp",
                headers=HEADERS,
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "fast-test", "version": "1"},
                    },
                },
            )
            session = {
                **HEADERS,
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            await client.post("/mcp", headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            hot, malformed = requests_sequence()
            for number, (method, params, extra) in enumerate(hot + malformed, 1):
                message = {"jsonrpc": "2.0", "id": number if number % 2 else f"s{number}", "method": method}
                if params is not None:
                    message["params"] = params
                response = await client.post("/mcp", headers={**session, **extra}, content=json.dumps(message))
                body = (
                    response.json()
                    if response.headers.get("content-type", "").startswith("application/json")
                    else response.text
                )
                transcript.append((response.status_code, _normalize(body)))
    return transcript


def _normalize(body):
    text = json.dumps(body, sort_keys=True)
    return json.loads(re.sub(r"[0-9a-f]{32}", "<session>", text))


def _log(path):
    volatile = {"started_at", "ended_at", "latency_ms", "upstream_ms", "seq", "session_opened"}
    records = []
    for record in iter_calls(path):
        assert (
            record.get("session_opened") is not None
            or record.get("session_id") in (None, "", "anonymous")
            or not record["session_id"].startswith("session-")
        ), record  # either path says when its session opened
        kept = {k: v for k, v in record.items() if k not in volatile}
        records.append(_normalize(kept))
    return records


def run(fn):
    async def bounded():
        with anyio.fail_after(30):
            return await fn()

    return anyio.run(bounded)


@pytest.mark.parametrize("response_mode", ["adaptive", "json"])
def test_fast_path_answers_as_the_sdk_does(tmp_path, monkeypatch, response_mode):
    slow_app, slow_server, slow_store = make_app(
        tmp_path, "slow", monkeypatch, enabled=False, response_mode=response_mode
    )
    slow = run(lambda: drive(slow_app))
    slow_store.close()
    fast_app, fast_server, fast_store = make_app(
        tmp_path, "fast", monkeypatch, enabled=True, response_mode=response_mode
    )
    fast = run(lambda: drive(fast_app))
    fast_store.close()
    hot, malformed = requests_sequence()
    assert fast_server.fast_path.served == len(hot)  # every hot request took the fast path ...
    # ... and the unusual ones did not (adaptive answers a request asking for progress with SSE: never offered)
    assert fast_server.fast_path.declined == len(malformed) - (response_mode == "adaptive")
    assert slow_server.fast_path.served == 0
    assert REPLAYED.mark(REPLAYED_RESULT).plain_text  # the replayed result's answer went as its JSON made once
    for number, (expected, got) in enumerate(zip(slow, fast, strict=True), 1):
        assert got == expected, f"request {number}"
    # Spot checks that the transcript is the interesting one.
    codes = [body.get("error", {}).get("code") for _, body in fast if isinstance(body, dict)]
    assert -32602 in codes and any(c is not None and c != -32602 for c in codes)
    assert any(body.get("result", {}).get("isError") for _, body in fast if isinstance(body, dict))
    slow_log, fast_log = _log(tmp_path / "slow"), _log(tmp_path / "fast")
    assert fast_log == slow_log and len(fast_log) >= 8
    by_outcome = {r["outcome"] for r in fast_log}
    assert {"ok", "rejected", "upstream_error"} <= by_outcome
    assert any(r["run_id"] == "run-7" and r["lane"] == "run-7" for r in fast_log)
    assert any(r["output_validation"] and r["output_validation"]["valid"] is False for r in fast_log)
    assert all(r["client_name"] == "fast-test" and r["protocol_version"] == "2025-11-25" for r in fast_log)


def test_sessions_that_accept_server_requests_keep_the_sdk_path(tmp_path, monkeypatch):
    app, server, store = make_app(tmp_path, "relay", monkeypatch, enabled=True, response_mode="json")

    async def go():
        async with lifespan(app):
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765"
            ) as client:
                init = await client.post(
                    "/mcp",
                    headers=HEADERS,
                    json={
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {"sampling": {}},
                            "clientInfo": {"name": "c", "version": "1"},
                        },
                    },
                )
                session = {
                    **HEADERS,
                    "mcp-session-id": init.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-06-18",
                }
                await client.post(
                    "/mcp", headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
                )
                response = await client.post(
                    "/mcp", headers=session, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                )
                return response.json()

    body = run(go)
    store.close()
    assert [t["name"] for t in body["result"]["tools"]] == [
        "alpha__add",
        "alpha__boom",
        "alpha__structured",
        "alpha__replayed",
    ]
    assert server.fast_path.served == 0 and server.fast_path.declined == 1


def test_requests_before_initialized_are_left_to_the_sdk(tmp_path, monkeypatch):
    app, server, store = make_app(tmp_path, "early", monkeypatch, enabled=True)

    async def go():
        async with lifespan(app):
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765"
            ) as client:
                unknown = await client.post(
                    "/mcp",
                    headers={**HEADERS, "mcp-session-id": "f" * 32},
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                )
                served_early = server.fast_path.served
                init = await client.post(
                    "/mcp",
                    headers=HEADERS,
                    json={
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {},
                            "clientInfo": {"name": "c", "version": "1"},
                        },
                    },
                )
                session = {
                    **HEADERS,
                    "mcp-session-id": init.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-06-18",
                }
                await client.post(
                    "/mcp", headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
                )
                after = await client.post("/mcp", headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "ping"})
                return unknown.status_code, served_early, after.json()

    unknown, served_early, after = run(go)
    store.close()
    assert unknown == 404 and served_early == 0  # an unknown session is the SDK's 404, not a fast answer
    # The fast path is on: the same ping in an initialized session it answers itself.
    assert after == {"jsonrpc": "2.0", "id": 2, "result": {}} and server.fast_path.served == 1


def test_the_fast_paths_chain_leaves_out_only_the_layers_that_say_they_have_nothing_to_do():
    """A layer with `on_fast_path(method)` False is not in that method's chain; one without it always is; the
    order of the others is the server's."""
    from mcpgw.gateway.endpoints.fast_path import FastContext, FastPath

    ran = []

    class Layer:
        def __init__(self, name, wanted=None):
            self.name = name
            if wanted is not None:
                self.on_fast_path = lambda method: method in wanted

        async def __call__(self, ctx, call_next):
            ran.append(self.name)
            return await call_next(ctx)

    class Server:
        cache_hints = {}
        middleware = [Layer("always"), Layer("calls only", {"tools/call"}), Layer("never", set())]

    async def handler(ctx, _typed):
        ran.append("handler")
        return {"content": [{"type": "text", "text": ctx.method}]} if ctx.method == "tools/call" else {"tools": []}

    fast = FastPath(Server(), {"tools/call": handler, "tools/list": handler}, {})

    async def run(method):
        ran.clear()
        ctx = FastContext(method, {}, 1, "2025-06-18", None, None)
        result = await fast._chain(method)(ctx)
        return list(ran), result

    assert anyio.run(run, "tools/call") == (
        ["always", "calls only", "handler"],
        {"content": [{"type": "text", "text": "tools/call"}]},
    )
    assert anyio.run(run, "tools/list")[0] == ["always", "handler"]


def test_a_replayed_results_answer_made_once_is_the_answer_made_every_time():
    """The JSON of a marked (replayed) result, made once and put in its envelope (fast_path._stable_text, _enveloped),
    is byte for byte the envelope made of the result shaped each time; results it cannot stand for are shaped as usual."""
    import gc
    from types import SimpleNamespace

    from mcpgw.gateway.encoding import result_memo
    from mcpgw.gateway.endpoints.fast_path import _envelope, _enveloped, _stable_text
    from mcpgw.gateway.sessions.sdk_adapter import serialize_result

    server = SimpleNamespace(cache_hints={})
    plain = [
        {"content": [{"type": "text", "text": 'a "quoted" é \u2028 line\n'}]},
        {"content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}], "isError": True},
        {"content": [], "isError": False},
    ]
    other = [
        {"content": [{"type": "text", "text": "s"}], "structuredContent": {"a": 1}},
        {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
    ]
    table = ResultMemo()
    for result in plain:
        table.mark(result)
        for request_id in (1, 0, -5, 2**40, "s1", 'q"é'):
            text = _stable_text(server, "tools/call", "2025-11-25", result)
            shaped = serialize_result(server, None, "tools/call", "2025-11-25", result)
            assert _enveloped(request_id, text) == _envelope(request_id, "result", shaped)
        assert _stable_text(server, "tools/list", "2025-11-25", result) is None
        assert _stable_text(SimpleNamespace(cache_hints={"tools/call": 1}), "tools/call", "2025-11-25", result) is None
    for result in other:
        table.mark(result)
        assert _stable_text(server, "tools/call", "2025-11-25", result) is None
    twin = {"content": [{"type": "text", "text": 'a "quoted" é \u2028 line\n'}]}  # equal, not marked
    assert _stable_text(server, "tools/call", "2025-11-25", twin) is None
    marked = plain[0]
    del table
    gc.collect()
    assert result_memo.known(marked) is None  # gone with the table that marked it
