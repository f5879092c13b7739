"""The old HTTP+SSE transport (protocol 2024-11-05), for harnesses and proxies that still use it.

`GET /sse` (every server, names as on `/mcp`) or `GET /servers/<id>/sse` (or `/sse/<id>`; one server, its own names:
`gateway.endpoints.per_server.ServerPaths` rewrites it to `/sse`, noting the server) opens an event stream; its
first event, `endpoint`, names the URL to POST messages to (`.../sse/messages?session_id=...`);
answers arrive on the stream. The SDK's `SseServerTransport`
does the transport; the gateway's SDK server (`gateway.mcp_server`) serves each stream as one
connection, so validation, call log, record/replay and the per-server views are `/mcp`'s.

Lanes: a run id on the GET (`?run=` or `X-Run-Id`) is carried into the endpoint URL the client
is given, so every message of the stream is tagged with it (and, with `--workers`, reaches the
worker that holds the stream). An untagged stream is its own client: its lane is the stream's.
The HTTP guard (Host/Origin, token, body checks) covers the stream and its message posts.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, quote

import anyio
import mcp_types as types
from mcp.server.sse import SseServerTransport

from mcpgw.gateway.endpoints.sse_streams import StreamTable
from mcpgw.gateway.errors.http_errors import send_error
from mcpgw.gateway.sessions.request_context import context_of

STREAM = (
    "/sse"  # GET: the event stream (also /servers/<id>/sse, rewritten here by gateway.endpoints.per_server.ServerPaths)
)
MESSAGES = "/sse/messages"  # POST: its messages (also /servers/<id>/sse/messages)
_SESSION_IN_ENDPOINT = re.compile(rb"(session_id=[0-9a-fA-F]+)")
_SESSION_ID = re.compile(rb"session_id=([0-9a-fA-F]+)")


class SseEndpoints:
    """The GET stream and message POST apps, for `/sse` and for every `/servers/<id>/sse`."""

    def __init__(self, server: Any, *, max_body: int, workers: Any = None, streams: StreamTable | None = None) -> None:
        self.server = server
        self.max_body = max_body
        self.workers = workers
        self.streams = (
            streams or StreamTable()
        )  # owners, unread answers, session limits (gateway.endpoints.sse_streams)
        self._transports: dict[str, SseServerTransport] = {}  # stream path as called -> its transport
        # ASGI apps for the routes (Starlette would take a bound method for a request -> response function).
        self.stream_app, self.messages_app = _Asgi(self.stream), _Asgi(self.messages)

    def _transport(self, base: str) -> SseServerTransport:
        """One transport per stream path: its `endpoint` event names that path's message URL."""
        transport = self._transports.get(base)
        if transport is None:
            transport = self._transports[base] = SseServerTransport(
                base + "/messages", max_request_body_size=self.max_body
            )
        return transport

    async def stream(self, scope: Any, receive: Any, send: Any) -> None:
        base = _base(scope)
        if scope["method"] != "GET":
            await send_error(
                send,
                405,
                types.INVALID_REQUEST,
                f"{base} takes GET (the event stream); post messages to the URL its 'endpoint' event names",
                extra=[(b"allow", b"GET")],
            )
            return
        run = _tagged_run(scope)
        if run is None and self.workers is not None:
            await send_error(
                send,
                400,
                types.INVALID_REQUEST,
                f"with --workers, {base} needs a run id: GET {base}?run=<id> (or an X-Run-Id header)",
            )
            return
        stream = await self.streams.open(scope)
        if stream is None:
            await send_error(send, 503, -32000, "too many sessions in use; retry later", extra=[(b"retry-after", b"5")])
            return
        client_send = send
        if run is not None:
            send = _with_run(send, run)
        send = self.streams.counting_send(stream, _naming(send, self.streams, stream))
        started: list[bool] = []
        try:
            with stream.cancel:  # closed to make room, or idle past the timeout (gateway.endpoints.sse_streams)
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self.streams.close_when_idle, stream)
                    async with self._transport(base).connect_sse(scope, receive, _noting_start(send, started)) as (
                        read,
                        write,
                    ):
                        await self.server.run(
                            read,
                            self.streams.counting_write(stream, write),
                            self.server.create_initialization_options(),
                        )
                    tasks.cancel_scope.cancel()
            if stream.cancel.cancelled_caught and started:  # end the event stream properly, not mid-response
                with anyio.move_on_after(5):
                    await client_send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.streams.closed(stream)

    async def messages(self, scope: Any, receive: Any, send: Any) -> None:
        base = _base(scope)
        ctx = context_of(scope)
        ctx.endpoint = base  # the call log names the stream, not its message URL
        session = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_id", [""])[0]
        ctx.client = f"sse-{session}"  # an untagged stream is one client: its lane is the stream's
        refusal = self.streams.refusal(scope, session)
        if refusal is not None:
            message = ctx.body
            await send_error(
                send,
                refusal[0],
                types.INVALID_REQUEST,
                refusal[1],
                request_id=message.get("id") if isinstance(message, dict) else None,
            )
            return
        await self._transport(base).handle_post_message(scope, receive, send)


def _base(scope: Any) -> str:
    """The stream path as the client called it: `/sse`, `/servers/<id>/sse`, or mcprouter's `/sse/<id>` (whose
    messages then go to `/sse/<id>/messages`: gateway.endpoints.per_server's aliases)."""
    ctx = context_of(scope)
    server = ctx.server
    if server is None:
        return STREAM
    return f"{STREAM}/{server}" if (ctx.endpoint or "").startswith(STREAM + "/") else f"/servers/{server}{STREAM}"


class _Asgi:
    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.handle(scope, receive, send)


def _naming(send: Any, streams: StreamTable, stream: Any) -> Any:
    """File the stream under the session id its `endpoint` event (its first) names."""
    pending = [True]

    async def naming(message: Any) -> None:
        if (
            pending[0]
            and message.get("type") == "http.response.body"
            and b"event: endpoint" in message.get("body", b"")
        ):
            pending[0] = False
            found = _SESSION_ID.search(message["body"])
            if found:
                streams.named(stream, found.group(1).decode())
        await send(message)

    return naming


def _noting_start(send: Any, started: list[bool]) -> Any:
    async def noting(message: Any) -> None:
        if message.get("type") == "http.response.start":
            started.append(True)
        await send(message)

    return noting


def _tagged_run(scope: Any) -> str | None:
    return context_of(scope).run


def _with_run(send: Any, run: str) -> Any:
    """Add the stream's run id to the message URL of its `endpoint` event (the stream's first)."""
    tag = b"&run=" + quote(run, safe="").encode()
    pending = [True]

    async def tagging(message: Any) -> None:
        if (
            pending[0]
            and message.get("type") == "http.response.body"
            and b"event: endpoint" in message.get("body", b"")
        ):
            pending[0] = False
            message = {
                **message,
                "body": _SESSION_IN_ENDPOINT.sub(lambda m: m.group(1) + tag, message["body"], count=1),
            }
        await send(message)

    return tagging
