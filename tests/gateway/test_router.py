"""The router behind the real front, in-process, with handler-based upstream doubles."""

from __future__ import annotations

from datetime import UTC

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.cassette.store import CassetteStore
from mcpgw.gateway.mcp_server import build_server
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import HandlerUpstream
from mcpgw.lock.config import ServerSpec
from mcpgw.recorder.calllog import CallLog, iter_calls
from tests.gateway.test_bad_input import run


def make_catalog(names, schema=None):
    default = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    return ServerCatalog(
        {"capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}},
        tools=[{"name": n, "inputSchema": default if schema is None else schema} for n in names],
    )


async def answer(method, params):
    return {"content": [{"type": "text", "text": f"{params['name']}:{params['arguments']}"}]}


def make_router(tmp_path, settings=None, specs=None, catalogs=None, handlers=None):
    specs = specs or [ServerSpec("alpha", "stdio", "x", title="Alpha"), ServerSpec("beta", "stdio", "x", title="Beta")]
    catalogs = catalogs or {"alpha": make_catalog(["add", "sub"]), "beta": make_catalog(["add"])}
    store = CassetteStore(tmp_path / "c")
    upstreams = {s.id: HandlerUpstream(s.id, (handlers or {}).get(s.id, answer), catalogs[s.id]) for s in specs}
    router = Router(specs, upstreams, settings or Settings(), CallLog(store))
    return router, store


def with_client(router, fn, mode="legacy"):
    async def go():
        with anyio.fail_after(20):
            async with router.running():
                async with Client(build_server(router), mode=mode) as client:
                    return await fn(client)

    return run(go)


def test_merged_catalog_pagination_and_routing(tmp_path):
    router, store = make_router(tmp_path, Settings(page_size=2))

    async def fn(client):
        first = await client.list_tools()
        page2 = await client.list_tools(cursor=first.next_cursor)
        result = await client.call_tool("beta__add", {"x": 1})
        return first, page2, result

    first, page2, result = with_client(router, fn)
    assert [t.name for t in first.tools] == ["alpha__add", "alpha__sub"] and first.next_cursor
    assert [t.name for t in page2.tools] == ["beta__add"] and page2.next_cursor is None
    assert result.content[0].text == "add:{'x': 1}"  # routed to beta with the upstream name
    store.close()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_call_log_records(tmp_path, mode):
    router, store = make_router(tmp_path)

    async def fn(client):
        await client.call_tool("alpha__add", {"x": 2})
        await client.call_tool("alpha__add", {"x": "two"})
        with pytest.raises(MCPError):
            await client.call_tool("alpah__add", {"x": 2})

    with_client(router, fn, mode)
    store.close()
    ok, invalid, unknown = list(iter_calls(tmp_path / "c"))
    assert (ok["server"], ok["tool"], ok["outcome"], ok["validation"]["valid"]) == ("alpha", "add", "ok", True)
    assert ok["protocol_version"] == ("2025-11-25" if mode == "legacy" else mode)
    assert invalid["validation"]["errors"][0]["keyword"] == "type" and invalid["outcome"] == "ok"
    assert unknown["known_tool"] is False and unknown["outcome"] == "rejected" and unknown["server"] == "alpha"
    assert [r["seq"] for r in (ok, invalid, unknown)] == [1, 2, 3]
    assert ok["latency_ms"] >= 0 and ok["result_digest"] and ok["input_schema_digest"]


def test_own_work_per_call_leaves_out_the_wait_on_the_upstream(tmp_path):
    """/status's own_work_us: one sample per tools/call (refused ones too), each the call's time less its upstream's."""

    async def slow(method, params):
        await anyio.sleep(0.2)
        return await answer(method, params)

    router, store = make_router(tmp_path, handlers={"alpha": slow})

    async def fn(client):
        await client.call_tool("alpha__add", {"x": 1})
        await client.call_tool("beta__add", {"x": 1})
        with pytest.raises(MCPError):
            await client.call_tool("nobody__add", {"x": 1})

    with_client(router, fn)
    store.close()
    own = list(router.own_work_s)
    latencies = [r["latency_ms"] / 1000 for r in iter_calls(tmp_path / "c")]
    assert len(own) == 3 and latencies[0] >= 0.2
    assert all(0 <= mine < 0.1 for mine in own)  # the 0.2 s on alpha's upstream is not the gateway's work
    assert router.status()["own_work_us"]["n"] == 3


def test_benchmark_naming_and_collisions(tmp_path):
    router, store = make_router(tmp_path, Settings(naming="benchmark"))

    async def fn(client):
        return [t.name for t in (await client.list_tools()).tools], await client.call_tool("Beta:add", {"x": 1})

    names, result = with_client(router, fn)
    assert names == ["Alpha:add", "Alpha:sub", "Beta:add"]
    assert not result.is_error
    store.close()
    same_title = [ServerSpec("alpha", "stdio", "x", title="Same"), ServerSpec("beta", "stdio", "x", title="Same")]
    router, store = make_router(tmp_path / "2", Settings(naming="benchmark"), specs=same_title)
    router.rebuild_catalog()
    assert "Same:add" in router.catalog.tools and router.catalog.tools["Same:add"].server == "alpha"
    assert any("alpha:'add'" in p and "beta:'add'" in p for p in router.catalog.problems)
    store.close()


def test_hidden_tools_and_wire_repair(tmp_path):
    specs = [ServerSpec("alpha", "stdio", "x", hide_tools=frozenset({"sub"})), ServerSpec("beta", "stdio", "x")]
    catalogs = {"alpha": make_catalog(["add", "sub"]), "beta": make_catalog(["noargs"], schema={})}
    router, store = make_router(tmp_path, specs=specs, catalogs=catalogs)
    router.rebuild_catalog()
    assert sorted(router.catalog.tools) == ["alpha__add", "beta__noargs"]
    assert router.catalog.tools["beta__noargs"].tool["inputSchema"] == {"type": "object"}
    assert any("beta:noargs" in p for p in router.catalog.problems)
    store.close()


def test_client_handles_do_not_keep_connections_alive(tmp_path):
    import gc

    router, store = make_router(tmp_path)

    class Connection:
        async def notify(self, method, params):
            pass

    connections = [Connection() for _ in range(20)]
    for connection in connections:
        router.register_client(connection, connection.notify)
    assert len(router._clients) == 20
    del connections, connection
    gc.collect()
    assert len(router._clients) == 0
    store.close()


def test_bare_naming_in_front_of_one_server_passes_unknown_names_to_it(tmp_path):
    seen = []

    async def server(method, params):
        seen.append((method, params.get("name") or params.get("uri")))
        if params.get("name") == "add":
            return {"content": [{"type": "text", "text": "3"}]}
        return {"content": [{"type": "text", "text": f"Tool {params.get('name')} not found"}], "isError": True}

    spec = ServerSpec("alpha", "stdio", "x")
    store = CassetteStore(tmp_path / "c")
    router = Router(
        [spec],
        {"alpha": HandlerUpstream("alpha", server, make_catalog(["add"]))},
        Settings(naming="bare"),
        CallLog(store),
    )

    async def fn(client):
        names = [t.name for t in (await client.list_tools()).tools]
        return names, await client.call_tool("add", {"x": 1}), await client.call_tool("nope", {"y": 2})

    names, known, unknown = with_client(router, fn)
    store.close()
    assert names == ["add"] and known.content[0].text == "3"
    assert unknown.is_error and unknown.content[0].text == "Tool nope not found"  # the server's own answer
    assert seen == [("tools/call", "add"), ("tools/call", "nope")]
    _, passed = list(iter_calls(tmp_path / "c"))
    assert (passed["server"], passed["known_tool"], passed["validation"]["valid"]) == ("alpha", False, None)

    # With two servers an unknown name has no owner: the gateway still refuses it.
    router, store = make_router(tmp_path / "2", Settings(naming="bare"))

    async def two(client):
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("nope", {})

    with_client(router, two)
    store.close()


def test_call_log_stamps_are_datetimes_isoformat_to_the_millisecond():
    """The stamps reuse the formatted second; they must be the text datetime would give, at every edge."""
    import random
    from datetime import datetime

    from mcpgw.gateway.routing.tool_calls import _iso

    rng = random.Random(7)
    edges = [0.0, 0.0005, 0.0004995, 0.9995, 0.9999995, 0.0125, 0.0124995, 0.5]
    stamps = [float(rng.randint(0, 2**31)) + rng.choice(edges) for _ in range(2000)]
    stamps += [rng.uniform(0, 4e9) for _ in range(2000)] + [1795456338.9999996, 1795456339.0]
    # Runs of stamps a tenth of a millisecond apart, as a call's two are: the last millisecond's text reused.
    stamps += [base + k * 0.0001 for base in (1795456338.9985, 1795456339.0004995, 2.0) for k in range(40)]
    for ts in stamps:
        assert _iso(ts) == datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds"), ts


def test_the_router_is_complete_at_construction_and_hears_its_upstreams_from_then_on():
    """The composition root builds the upstreams first, with one UpstreamEvents; the router, built with all of them,
    listens to it from its constructor: a server's log message and its changed catalog reach the router's clients
    and its bus (2026-07-28 listen streams) with nothing assigned to the router afterwards."""
    from mcp.shared.subscriptions import ToolsListChanged

    from mcpgw.gateway.upstreams.events import UpstreamEvents

    events = UpstreamEvents()
    upstreams = {"alpha": HandlerUpstream("alpha", answer, make_catalog(["add"]))}
    router = Router(
        [ServerSpec("alpha", "stdio", "x")],
        upstreams,
        Settings(),
        None,
        events=events,
        recording="cassettes/c",
        trace_calls=lambda record, params: params,
    )
    assert router.upstreams is upstreams and router.recording == "cassettes/c" and router.trace_calls is not None
    heard: list = []

    class Connection:
        async def notify(self, method, params):
            heard.append((method, params))

    connection = Connection()
    router.register_client(connection, connection.notify)
    published: list = []
    router.event_bus.subscribe(published.append)

    async def go():
        await events.notification("alpha", "notifications/message", {"level": "info", "data": "hi"})
        await events.catalog_changed("alpha", "all")

    anyio.run(go)
    assert heard == [
        ("notifications/message", {"level": "info", "data": "hi", "logger": "alpha"}),
        ("notifications/tools/list_changed", None),
    ]
    assert [type(event) for event in published] == [ToolsListChanged]
    assert list(router.catalog.tools) == ["add"]  # one server: bare names
    with pytest.raises(RuntimeError):  # one listener: the router built with them
        Router([], {}, Settings(), None, events=events)
