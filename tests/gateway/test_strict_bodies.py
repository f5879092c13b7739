"""Issue 41 item 8: every POST route reads its body through the one strict parser.

The routes are not listed here: they are walked from the app `mcpgw serve` builds (gateway + model routes +
telemetry), so a route added later is walked too. Each gets bodies Python's parser takes and RFC 8259 does not
(NaN, Infinity, a number that overflows to infinity, a lone surrogate escape), on a real gateway: each is a 4xx
in the route's own error shape, none reaches a server or the call log, and the gateway still answers after.
"""

from __future__ import annotations

import json

import httpx
import pytest

from mcpgw.app import Gateway
from mcpgw.gateway.sessions.request_context import posted_json
from mcpgw.gateway.specs.settings import Settings, TelemetrySettings
from mcpgw.lock.config import parse_config
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import misbehaving_entry

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("good")
BAD_VALUES = {"nan": "NaN", "infinity": "-Infinity", "overflow": "1e999", "lone-surrogate": '"\\ud800"'}
PATH_VALUES = {"deployment": "gpt-4o"}


def _body(bad: str) -> bytes:
    """One body every route would otherwise take (an MCP call, mcprouter's call-tool, a chat request), with a
    value no RFC 8259 parser gives back in its arguments and its prompt."""
    return (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "good__echo", "arguments": '
        f'{{"x": {bad}}}}}, "server": "good", "name": "echo", "arguments": {{"x": {bad}}}, "model": "m", '
        f'"messages": [{{"role": "user", "content": {bad}}}]}}'
    ).encode()


def post_routes(tmp_path) -> list[str]:
    """The paths of every route that takes a POST, from the app `mcpgw serve` builds, with the per-server
    forms of the MCP ones (rewritten to them before routing)."""
    specs = list(parse_config(CONFIG).servers.values())
    gateway = Gateway(
        specs,
        Settings(
            mode="live", cassettes_dir=tmp_path / "walk", cassette="walk", telemetry=TelemetrySettings(metrics=True)
        ),
    )
    try:
        app = gateway.http_app().asgi
        while not hasattr(app, "router"):
            app = app.app
        paths = [
            route.path.format(**PATH_VALUES)
            for route in app.router.routes
            if route.methods is None or "POST" in route.methods
        ]
    finally:
        gateway.close()
    return paths + [f"/servers/good{path}" for path in ("/mcp", "/sse/messages")]


def test_the_walk_finds_every_kind_of_post_route(tmp_path):
    paths = post_routes(tmp_path)
    for expected in (
        "/mcp",
        "/sse/messages",
        "/v1/call-tool",
        "/v1/list-tools",
        "/v1/chat/completions",
        "/openai/deployments/gpt-4o/chat/completions",
        "/servers/good/mcp",
    ):
        assert expected in paths


@pytest.mark.parametrize("bad", sorted(BAD_VALUES))
def test_every_post_route_refuses_what_rfc_8259_does_not_allow(gateway_factory, tmp_path, bad):
    gateway = gateway_factory(CONFIG)
    body = _body(BAD_VALUES[bad])
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    for path in post_routes(tmp_path):
        answer = httpx.post(gateway.base + path, content=body, headers=headers, timeout=30)
        assert 400 <= answer.status_code < 500, (path, answer.status_code, answer.text[:300])
        shaped = answer.json()  # JSON in the route's own shape, never a plain-text 500
        if path.startswith("/v1/") and "chat" not in path:
            assert shaped["code"] == -1 and "not JSON" in shaped["message"], (path, shaped)
    assert httpx.get(gateway.base + "/healthz", timeout=10).status_code == 200
    cassette = gateway.cassettes / "test"
    logged = list(iter_calls(cassette)) if cassette.exists() else []
    assert logged == [], [json.dumps(r)[:200] for r in logged]  # nothing reached a server or the call log


def test_a_handler_cannot_read_a_body_the_guard_did_not_parse():
    with pytest.raises(RuntimeError, match="before the HTTP guard parsed it"):
        posted_json({"type": "http", "path": "/v1/new-route"})
