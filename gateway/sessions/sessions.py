"""Room for new clients: handshake-era sessions are bounded per client and in total.

The SDK refuses a new session with 503 once its table is full, and a session
lives until it has been idle for its timeout, so one client that opens
thousands of sessions locks every other client out. This layer admits new
sessions itself: when a client is at its own limit, or the gateway at the total
limit, the session least worth keeping is closed to make room (first sessions
that never made a request after `initialize`, then the least recently used);
a session with a request in flight is never closed. Only when every session is
busy is a new one refused (503, with Retry-After).

Closing goes through the transport's own door: a DELETE for that session id,
as its client would send, so the SDK forgets it and frees its task.

The table kept here is the gateway's one record of handshake sessions beside the SDK's: per session its
client, its use, whether it may receive server->client requests (JSON-or-SSE, gateway.endpoints.transport) and its
SDK connection (for the fast path, filled in by `SessionDirectory`).
"""

from __future__ import annotations

import json
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.streamable_http import check_accept_headers
from starlette.requests import Request

from mcpgw.gateway.errors.http_errors import send_body, send_error
from mcpgw.gateway.sessions.pipeline_verdicts import DECLINED, HotHead
from mcpgw.gateway.sessions.request_context import context_of
from mcpgw.gateway.sessions.request_params import INVALID_PARAMS, params_problem
from mcpgw.gateway.sessions.sdk_adapter import connection_of

logger = logging.getLogger(__name__)


@dataclass
class SessionLimits:
    max_sessions: int = 1000
    per_client: int = 200
    idle_timeout: float = 600.0  # seconds; the SDK closes a session idle this long
    sse_max_unread: int = (
        16 * 1024 * 1024
    )  # bytes of answers an SSE stream may hold unread (gateway.endpoints.sse_streams)


_RELAY_CAPABILITIES = ("sampling", "elicitation", "roots")


@dataclass
class Session:
    client: str
    last_active: float
    busy: int = 0
    used: bool = False  # made a request after initialize
    relay: bool = False  # declared sampling/elicitation/roots: its requests may need a stream
    connection: Any = None  # weak reference to the SDK's Connection, once a request has passed the server
    plain: bool | None = (
        None  # the fast path's verdict on that connection once initialized (gateway.endpoints.fast_path)
    )
    closer: Callable[[], None] | None = None  # an SSE stream's (gateway.endpoints.sse_streams): closes it to make room
    # When it was opened (wall clock): the call log records it with each call of the session, so the evaluator can
    # tell the sessions a harness opened together for one task (evaluator.calllog.group_by_run, `--tasks-by session`).
    opened: float = field(default_factory=time.time)


SessionTable = dict[str, Session]


class SessionDirectory:
    """Server middleware: files each handshake session's SDK connection in the session table.

    The connection carries what the SDK learnt at initialize (protocol version, client info)."""

    def __init__(self, sessions: SessionTable) -> None:
        self.sessions = sessions

    def on_fast_path(self, method: str) -> bool:
        return False  # the fast path takes only sessions this layer has filed already (gateway.endpoints.fast_path)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        connection = connection_of(ctx.session)
        session_id = getattr(connection, "session_id", None)
        if session_id is not None:
            session = self.sessions.get(session_id)
            if session is None:  # its initialize is being answered (in JSON): admission files it on the answer
                session = self.sessions[session_id] = Session("?", time.monotonic())
            if session.connection is None:
                session.connection = weakref.ref(connection)
        return await call_next(ctx)


def hold(session: Session) -> None:
    """A request of this session is being served: it is in use, and not to be closed for room."""
    session.busy += 1
    session.used = True
    session.last_active = time.monotonic()


def release(session: Session) -> None:
    session.busy -= 1
    session.last_active = time.monotonic()


def connection(session: Session | None) -> Any:
    return session.connection() if session is not None and session.connection is not None else None


class SessionAdmission:
    def __init__(
        self, app: Any, limits: SessionLimits, mcp_path: str = "/mcp", sessions: SessionTable | None = None
    ) -> None:
        self.app = app
        self.limits = limits
        self.mcp_path = mcp_path
        self.sessions: SessionTable = sessions if sessions is not None else {}
        self.opening: dict[str, int] = {}  # client -> sessions being opened right now
        self.evicted = 0
        self.refused = 0

    def stats(self) -> dict[str, Any]:
        return {
            "open": len(self.sessions),
            "max": self.limits.max_sessions,
            "per_client": self.limits.per_client,
            "idle_timeout_s": self.limits.idle_timeout,
            "evicted": self.evicted,
            "refused": self.refused,
        }

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.mcp_path:
            await self.app(scope, receive, send)
            return
        ctx = context_of(scope)
        if ctx.modern:  # 2026-07-28 requests carry their version in a header and open no session
            await self.app(scope, receive, send)
            return
        session_id = ctx.session_id
        if session_id is not None:
            await self._serve_existing(session_id, scope, receive, send)
            return
        client = _client(scope)
        if scope["method"] != "POST":  # a sessionless GET or DELETE: refused, and told no session's name either
            await self.app(scope, receive, self._watch_opening(send, client, False))
            return
        message = ctx.body
        if not (isinstance(message, dict) and message.get("method") == "initialize"):
            # Only an initialize opens a session: a sessionless per-server call or a call sent before
            # initialize must not close one of the client's idle sessions to make room for nothing.
            await self.app(scope, receive, self._watch_opening(send, client, False))
            return
        if (
            params_problem("initialize", None, message.get("params")) is not None
            and check_accept_headers(Request(scope))[0]
        ):
            # The SDK would mint a session, name it in its answer's head, then refuse the params: a session no
            # request can use, open until its idle timeout. Refused here, as the SDK words it, with no session.
            body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": INVALID_PARAMS}).encode()
            await send_body(send, 200, body)
            return
        if not await self._make_room(client):
            self.refused += 1
            await send_error(send, 503, -32000, "too many sessions in use; retry later", extra=[(b"retry-after", b"5")])
            return
        self.opening[client] = self.opening.get(client, 0) + 1
        counted = True

        def opened() -> None:
            # Once its session is filed in the table (the answer's head) it counts there, not in `opening` as
            # well while the rest of the answer goes out: a client may have read it all and sent its next
            # initialize before this task ends, which then found one session counted twice and closed it.
            nonlocal counted
            if counted:
                counted = False
                self.opening[client] -= 1
                if not self.opening[client]:
                    del self.opening[client]

        try:
            await self.app(scope, receive, self._watch_opening(send, client, _wants_relay(ctx.body), opened))
        finally:
            opened()

    async def admit_stream(self, client: str, close: Callable[[], None]) -> Session | None:
        """An SSE stream opening (gateway.endpoints.sse_streams) is a session for every limit: room is made for it as for an
        `initialize`, else None (refused: every session busy). `close` closes it when it is the one to make room."""
        if not await self._make_room(client):
            self.refused += 1
            return None
        session = Session(client, time.monotonic(), closer=close)
        self.sessions[f"sse:{id(session):x}"] = session  # no Mcp-Session-Id looks like this: no request can name it
        return session

    def stream_closed(self, session: Session) -> None:
        for key in [key for key, known in self.sessions.items() if known is session]:
            del self.sessions[key]

    def hot_head(self, head: HotHead) -> bool:
        return head.path != self.mcp_path or (head.session_id is not None and not head.modern)

    def hot_body(self, head: HotHead, body: bytes, message: Any) -> Any:
        """Its session open here, and no SSE stream's (the hot lane holds it busy while it answers, as here)."""
        session_id = head.session_id
        session = self.sessions.get(session_id) if session_id is not None and head.path == self.mcp_path else None
        return message if session is not None and session.closer is None else DECLINED

    async def _serve_existing(self, session_id: str, scope: Any, receive: Any, send: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None or session.closer is not None:
            await self.app(scope, receive, send)
            return
        hold(session)
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            release(session)
            if scope["method"] == "DELETE" or (status and status[0] == 404):
                self.sessions.pop(session_id, None)

    def _watch_opening(self, send: Any, client: str, relay: bool, opened: Callable[[], None] | None = None) -> Any:
        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        known = self.sessions.get(value.decode("latin-1"))  # its connection filed already
                        self.sessions[value.decode("latin-1")] = Session(
                            client,
                            time.monotonic(),
                            relay=relay,
                            connection=known.connection if known else None,
                            opened=known.opened if known else time.time(),
                        )
                        if opened is not None:  # no await between: never counted twice
                            opened()
            elif message["type"] == "http.response.start":
                # Refused (e.g. a tools/call before initialize): the SDK minted a session for it, named it in
                # the answer, and discards it at once. A client must not be handed the name of no session.
                message = {
                    **message,
                    "headers": [(k, v) for k, v in message.get("headers", []) if k.lower() != b"mcp-session-id"],
                }
            await send(message)

        return watch

    async def _make_room(self, client: str) -> bool:
        self._forget_expired()
        mine = [sid for sid, s in self.sessions.items() if s.client == client]
        if len(mine) + self.opening.get(client, 0) >= self.limits.per_client:
            if not await self._close_one(mine):
                return False
        if len(self.sessions) + sum(self.opening.values()) >= self.limits.max_sessions:
            return await self._close_one(list(self.sessions))
        return True

    async def _close_one(self, candidates: list[str]) -> bool:
        idle = [sid for sid in candidates if self.sessions[sid].busy == 0]
        if not idle:
            return False
        victim = min(idle, key=lambda sid: (self.sessions[sid].used, self.sessions[sid].last_active))
        closer = self.sessions.pop(victim).closer
        self.evicted += 1
        logger.info("closing idle session %s to make room for a new one", victim[:16])
        if closer is not None:  # an SSE stream: its own door
            closer()
        else:
            await self._delete(victim)
        return True

    def _forget_expired(self) -> None:
        """The SDK has closed these already (idle timeout); drop them from the count."""
        horizon = time.monotonic() - self.limits.idle_timeout - 1
        for sid in [sid for sid, s in self.sessions.items() if s.busy == 0 and s.last_active < horizon]:
            del self.sessions[sid]

    async def _delete(self, session_id: str) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": self.mcp_path,
            "raw_path": self.mcp_path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"mcp-session-id", session_id.encode())],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }
        delivered = False

        async def receive() -> Any:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(_: Any) -> None:
            pass

        try:
            await self.app(scope, receive, discard)
        except Exception:  # noqa: BLE001 - the session is gone from our table either way
            logger.debug("closing session %s failed", session_id[:16], exc_info=True)


def _wants_relay(message: Any) -> bool:
    """An initialize declaring a capability the upstream may use to send the client requests."""
    params = message.get("params") if isinstance(message, dict) and message.get("method") == "initialize" else None
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    return isinstance(capabilities, dict) and any(capabilities.get(name) is not None for name in _RELAY_CAPABILITIES)


def _client(scope: Any) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"
