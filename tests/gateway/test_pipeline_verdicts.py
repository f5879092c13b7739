"""The hot lane asks the declared pipeline, not named layers: a layer added to the list reaches it unedited.

A gateway is built in-process (a handler upstream behind the real router, front, pipeline and uvicorn with
the hot lane), with one more layer added to the MCP endpoint's list (`http_app.endpoint_layers`), and
driven over raw HTTP: a layer that refuses tools/call refuses hot calls too, whether it gives no verdict
(the lane shuts) or a verdict that declines what it refuses (the lane takes the rest).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from typing import Any

import anyio
import pytest

from mcpgw.cassette.store import CassetteStore
from mcpgw.gateway.endpoints import http_app
from mcpgw.gateway.endpoints.pipeline import Layer
from mcpgw.gateway.errors.http_errors import send_error
from mcpgw.gateway.mcp_server import build_http_app, build_server
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.sessions.pipeline_verdicts import HotHead, verdicts
from mcpgw.gateway.sessions.request_context import context_of
from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import HandlerUpstream
from mcpgw.recorder.calllog import CallLog
from tests.gateway.test_commit_batch import _add, _answer

BLOCK = "x-no-tools"  # the header the verdict-giving layer refuses tools/call on


class RefusesToolCalls:
    """A plain ASGI layer as someone would add it: tools/call refused (403). No verdict for the hot lane."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.refused = 0

    def refuses(self, scope: Any) -> bool:
        message = context_of(scope).body if scope["type"] == "http" else None
        return isinstance(message, dict) and message.get("method") == "tools/call"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.refuses(scope):
            self.refused += 1
            await send_error(send, 403, -32001, "tools/call refused by the added layer")
            return
        await self.app(scope, receive, send)


class RefusesMarkedToolCalls(RefusesToolCalls):
    """Refuses tools/call on requests that carry BLOCK, and says so to the hot lane from the head."""

    def refuses(self, scope: Any) -> bool:
        return super().refuses(scope) and BLOCK in context_of(scope).headers

    @staticmethod
    def hot_head(head: HotHead) -> bool:
        return BLOCK not in head.decoded


def _post(host: str, message: dict, session: str | None = None, extra: str = "") -> bytes:
    body = json.dumps(message).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n{extra}"
    )
    if session:
        head += f"mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"
    return head.encode() + b"\r\n" + body


def _serve_and_call(tmp_path, monkeypatch, added: type | None, extra: str = "") -> tuple[Any, list[bytes]]:
    """A gateway with `added` as the endpoint list's last layer; one session, three tools/call; their answers."""
    declared = http_app.endpoint_layers
    if added is not None:
        monkeypatch.setattr(http_app, "endpoint_layers", lambda *a, **k: [*declared(*a, **k), Layer.of(added)])
    catalog = ServerCatalog(
        {"capabilities": {"tools": {}}, "serverInfo": {"name": "adder", "version": "1"}},
        tools=[{"name": "add", "inputSchema": {"type": "object"}}],
    )
    router = Router(
        [ServerSpec("alpha", "stdio", "x")],
        {"alpha": HandlerUpstream("alpha", _add, catalog)},
        Settings(validate="enforce", naming="prefix"),
        CallLog(CassetteStore(tmp_path / "log")),
    )
    app = build_http_app(router, build_server(router), "127.0.0.1", response_mode="json")
    assert app.hot_lane is not None
    port: list[int] = []
    answers: list[bytes] = []
    failure: list[BaseException] = []

    def client() -> None:
        try:
            host = f"127.0.0.1:{port[0]}"
            with socket.create_connection(("127.0.0.1", port[0]), timeout=20) as sock:
                sock.sendall(
                    _post(
                        host,
                        {
                            "jsonrpc": "2.0",
                            "id": 0,
                            "method": "initialize",
                            "params": {
                                "protocolVersion": "2025-11-25",
                                "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"},
                            },
                        },
                    )
                )
                session = re.search(rb"mcp-session-id: (\S+)", _answer(sock)).group(1).decode()
                sock.sendall(_post(host, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session))
                assert _answer(sock).startswith(b"HTTP/1.1 202")
                for number in range(3):  # the same head each time: the lane's repeated-head path too
                    sock.sendall(
                        _post(
                            host,
                            {
                                "jsonrpc": "2.0",
                                "id": 1 + number,
                                "method": "tools/call",
                                "params": {"name": "alpha__add", "arguments": {"a": number, "b": 1}},
                            },
                            session,
                            extra,
                        )
                    )
                    answers.append(_answer(sock))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failure.append(exc)
        finally:
            loop.call_soon_threadsafe(stop.set)

    async def main() -> None:
        nonlocal loop, stop
        loop, stop = asyncio.get_running_loop(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(http_app.serve_http, app, "127.0.0.1", 0, port.append)
            while not port:
                await anyio.sleep(0.01)
            thread = threading.Thread(target=client)
            thread.start()
            with anyio.fail_after(60):
                await stop.wait()
            tg.cancel_scope.cancel()
        thread.join(5)

    loop: Any = None
    stop: Any = None
    anyio.run(main, backend="asyncio")
    assert not failure, failure
    return app, answers


def test_without_an_added_layer_the_lane_answers_the_calls(tmp_path, monkeypatch):
    app, answers = _serve_and_call(tmp_path, monkeypatch, None)
    assert [a.split(b"\r\n")[0] for a in answers] == [b"HTTP/1.1 200 OK"] * 3
    assert app.hot_lane.served == 3 and app.hot_lane.open


def test_a_layer_with_no_verdict_shuts_the_lane_and_refuses_hot_calls(tmp_path, monkeypatch):
    app, answers = _serve_and_call(tmp_path, monkeypatch, RefusesToolCalls)
    assert [a.split(b"\r\n")[0] for a in answers] == [b"HTTP/1.1 403 Forbidden"] * 3
    assert all(b"refused by the added layer" in a for a in answers)
    assert not app.hot_lane.open and app.hot_lane.served == 0


@pytest.mark.parametrize("marked", [True, False], ids=["marked: declined", "unmarked: taken"])
def test_a_layer_whose_verdict_declines_is_asked_by_the_lane(tmp_path, monkeypatch, marked):
    app, answers = _serve_and_call(tmp_path, monkeypatch, RefusesMarkedToolCalls, f"{BLOCK}: 1\r\n" if marked else "")
    status = b"HTTP/1.1 403 Forbidden" if marked else b"HTTP/1.1 200 OK"
    assert [a.split(b"\r\n")[0] for a in answers] == [status] * 3
    assert app.hot_lane.open and app.hot_lane.served == (0 if marked else 3)


def test_every_declared_layer_gives_the_lane_a_verdict():
    """The lists as declared today: each layer answers the lane (else the lane would be shut for everyone)."""
    outer = http_app.outer_layers(http_app.GuardPolicy(allowed_hosts=("127.0.0.1",)), ("/mcp",))
    endpoint = http_app.endpoint_layers(None, http_app.SessionLimits(), "/mcp", {}, "default", None)  # type: ignore[arg-type]
    classes = [layer.cls for layer in [*outer, *endpoint]]
    assert all(hasattr(cls, "hot_head") for cls in classes), [
        cls.__name__ for cls in classes if not hasattr(cls, "hot_head")
    ]
    assert verdicts([RefusesToolCalls(None)]) is None
