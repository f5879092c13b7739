"""One request context per HTTP request: headers read once, decisions shared by every layer (unit tests)."""

from __future__ import annotations

import anyio

from mcpgw.gateway.endpoints.pipeline import Layer, assemble
from mcpgw.gateway.sessions.request_context import CONTEXT, context_of, with_message


def scope(headers=(), query=b""):
    return {"type": "http", "method": "POST", "path": "/mcp", "query_string": query, "headers": list(headers)}


def test_session_version_and_run_come_from_one_reading_of_the_headers():
    s = scope(
        [(b"mcp-session-id", b"abc"), (b"mcp-protocol-version", b"2025-11-25"), (b"x-run-id", b"from-header")],
        query=b"run=from-query&x=1",
    )
    ctx = context_of(s)
    assert (ctx.session_id, ctx.protocol_version, ctx.modern, ctx.run) == ("abc", "2025-11-25", False, "from-query")
    assert ctx.caller == "session-abc"
    s["headers"] = []  # later layers read the context, not the headers
    assert context_of(s) is ctx and ctx.session_id == "abc"


def test_the_run_header_counts_when_the_query_names_none_and_a_modern_version_is_seen():
    ctx = context_of(scope([(b"x-run-id", b"r1"), (b"mcp-protocol-version", b"2026-07-28")], query=b"xrun=2"))
    assert ctx.run == "r1" and ctx.modern and ctx.session_id is None


def test_the_cookie_names_a_client_only_when_well_formed():
    good = context_of(scope([(b"cookie", b"a=1; mcpgw-client=abcdef0123456789")]))
    bad = context_of(scope([(b"cookie", b"mcpgw-client=../../etc")]))
    split = context_of(scope([(b"cookie", b"a=1"), (b"cookie", b"mcpgw-client=0123456789abcdef")]))
    assert (good.cookie_identity, bad.cookie_identity, split.cookie_identity) == (
        "abcdef0123456789",
        None,
        "0123456789abcdef",
    )
    assert bad.caller == "anonymous"
    bad.client = "0123456789abcdef"
    assert bad.caller == "client-0123456789abcdef"


def test_a_rewritten_message_gets_its_own_context_and_leaves_the_original_alone():
    s = scope([(b"mcp-session-id", b"s")])
    context_of(s).message = {"id": 7}
    copy = with_message(s, {"id": "alias"})
    assert copy[CONTEXT].body == {"id": "alias"} and s[CONTEXT].body == {"id": 7}
    assert copy[CONTEXT].session_id == "s"
    assert context_of(scope()).body is None and not context_of(scope()).parsed


def test_layers_are_assembled_first_outermost_and_a_left_out_layer_is_skipped():
    order: list[str] = []

    def layer(name):
        class Named:
            def __init__(self, app, **kwargs):
                self.app, self.kwargs = app, kwargs

            async def __call__(self, s, receive, send):
                order.append(name)
                await self.app(s, receive, send)

        return Named

    async def inner(s, receive, send):
        order.append("app")

    first, skipped, last = layer("first"), layer("skipped"), layer("last")
    app, built = assemble(inner, [Layer.of(first, tag=1), Layer.of(skipped, when=False), Layer.of(last)])
    anyio.run(app, scope(), None, None)
    assert order == ["first", "last", "app"]
    assert set(built) == {first, last} and built[first].kwargs == {"tag": 1}
