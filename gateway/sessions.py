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
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from gateway.http_guard import send_error

logger = logging.getLogger(__name__)


@dataclass
class SessionLimits:
    max_sessions: int = 1000
    per_client: int = 200
    idle_timeout: float = 600.0  # seconds; the SDK closes a session idle this long


@dataclass
class _Session:
    client: str
    last_active: float
    busy: int = 0
    used: bool = False  # made a request after initialize


class SessionAdmission:
    def __init__(self, app: Any, limits: SessionLimits, mcp_path: str = "/mcp") -> None:
        self.app = app
        self.limits = limits
        self.mcp_path = mcp_path
        self.sessions: dict[str, _Session] = {}
        self.opening: dict[str, int] = {}  # client -> sessions being opened right now
        self.evicted = 0
        self.refused = 0

    def stats(self) -> dict[str, Any]:
        return {"open": len(self.sessions), "max": self.limits.max_sessions, "per_client": self.limits.per_client,
                "idle_timeout_s": self.limits.idle_timeout, "evicted": self.evicted, "refused": self.refused}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.mcp_path or _is_modern(scope):
            await self.app(scope, receive, send)
            return
        session_id = _header(scope, b"mcp-session-id")
        if session_id is not None:
            await self._serve_existing(session_id, scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        client = _client(scope)
        if not await self._make_room(client):
            self.refused += 1
            await send_error(send, 503, -32000, "too many sessions in use; retry later", extra=[(b"retry-after", b"5")])
            return
        self.opening[client] = self.opening.get(client, 0) + 1
        try:
            await self.app(scope, receive, self._watch_opening(send, client))
        finally:
            self.opening[client] -= 1
            if not self.opening[client]:
                del self.opening[client]

    async def _serve_existing(self, session_id: str, scope: Any, receive: Any, send: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            await self.app(scope, receive, send)
            return
        session.busy += 1
        session.used = True
        session.last_active = time.monotonic()
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            session.busy -= 1
            session.last_active = time.monotonic()
            if scope["method"] == "DELETE" or (status and status[0] == 404):
                self.sessions.pop(session_id, None)

    def _watch_opening(self, send: Any, client: str) -> Any:
        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        self.sessions[value.decode("latin-1")] = _Session(client, time.monotonic())
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
        self.sessions.pop(victim, None)
        self.evicted += 1
        logger.info("closing idle session %s to make room for a new one", victim[:16])
        await self._delete(victim)
        return True

    def _forget_expired(self) -> None:
        """The SDK has closed these already (idle timeout); drop them from the count."""
        horizon = time.monotonic() - self.limits.idle_timeout - 1
        for sid in [sid for sid, s in self.sessions.items() if s.busy == 0 and s.last_active < horizon]:
            del self.sessions[sid]

    async def _delete(self, session_id: str) -> None:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "DELETE", "scheme": "http",
            "path": self.mcp_path, "raw_path": self.mcp_path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"mcp-session-id", session_id.encode())],
            "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0),
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


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _is_modern(scope: Any) -> bool:
    """2026-07-28 requests carry their version in a header and open no session."""
    version = _header(scope, b"mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def _client(scope: Any) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"
