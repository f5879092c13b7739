"""What the gateway keeps per open SSE stream (gateway.endpoints.sse): who opened it, what it holds unread, when it was used.

The old transport answers on the stream, not on the post, which opened three holes this closes:
- **Owner.** A post into a stream must come from the client that opened it: the same address, the same
  `Authorization` header, the same run (a tagged stream's endpoint URL carries its run). Anyone else holding the
  session id is refused (403): their call would be logged under their run and answered on the owner's stream.
- **Unread answers.** A stream whose client does not read holds every answer the gateway made for it: 600 answers
  of 500 KB took a gateway from 215 MB to 796 MB. The answers made and not yet written to the socket are counted in
  bytes, and the requests posted and not yet answered in number; past `--sse-max-unread-bytes` or `MAX_WAITING`,
  new posts are refused (429, said in the gateway's log) until the client reads.
- **Sessions.** A stream is a session for every session limit (gateway.sessions.sessions): it is admitted as an
  `initialize` is (room made by closing the session least worth keeping, else 503), may itself be closed to make
  room while idle, and is closed once idle past `--session-idle-timeout`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types

from mcpgw.gateway.sessions.request_context import context_of
from mcpgw.gateway.sessions.sessions import Session, SessionAdmission, SessionLimits, hold, release

logger = logging.getLogger(__name__)

MAX_WAITING = 256  # requests of one stream posted and not answered yet


@dataclass(eq=False)
class OpenStream:
    client: str  # the address that opened it
    authorization: str  # the Authorization header it was opened with ("" for none)
    run: str | None  # the run it was opened under (?run= / X-Run-Id), None when untagged
    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    session: Session | None = None  # its entry in the session table, when admission counts streams
    unread: int = 0  # bytes of answers made for it and not yet written to its socket
    sizes: deque[int] = field(default_factory=deque)  # those answers' sizes, oldest first
    waiting: int = 0  # requests posted and not answered yet
    refused: int = 0


class StreamTable:
    """The open streams of one gateway, by the session id each stream's `endpoint` event names."""

    def __init__(
        self, admission: SessionAdmission | None = None, max_unread: int | None = None, max_waiting: int = MAX_WAITING
    ) -> None:
        self.admission = admission
        self.max_unread = (
            max_unread
            if max_unread is not None
            else (admission.limits.sse_max_unread if admission is not None else SessionLimits().sse_max_unread)
        )
        self.max_waiting = max_waiting
        self.streams: dict[str, OpenStream] = {}

    async def open(self, scope: Any) -> OpenStream | None:
        """A stream about to open, admitted as a session (None: no room, every session busy)."""
        ctx = context_of(scope)
        client = scope.get("client")
        stream = OpenStream(str(client[0]) if client else "?", ctx.headers.get("authorization", ""), ctx.run)
        if self.admission is not None:
            stream.session = await self.admission.admit_stream(stream.client, stream.cancel.cancel)
            if stream.session is None:
                return None
        return stream

    def named(self, stream: OpenStream, session_id: str) -> None:
        self.streams[session_id] = stream

    def closed(self, stream: OpenStream) -> None:
        for session_id in [sid for sid, known in self.streams.items() if known is stream]:
            del self.streams[session_id]
        if self.admission is not None and stream.session is not None:
            self.admission.stream_closed(stream.session)

    def refusal(self, scope: Any, session_id: str) -> tuple[int, str] | None:
        """Why a post into stream `session_id` is refused, if it is; else it counts as a use of the stream."""
        stream = self.streams.get(session_id)
        if stream is None:
            return None  # the SDK's own answer: no such session
        ctx = context_of(scope)
        client = scope.get("client")
        address = str(client[0]) if client else "?"  # "?": relayed from another worker (--workers), over a Unix socket
        other_address = "?" not in (address, stream.client) and address != stream.client
        if other_address or ctx.headers.get("authorization", "") != stream.authorization or ctx.run != stream.run:
            return 403, (
                "this SSE session belongs to another client (a post must come from the client that opened the "
                "stream: the same address, token and run)"
            )
        if stream.unread > self.max_unread or stream.waiting >= self.max_waiting:
            stream.refused += 1
            logger.warning(
                "SSE stream %s: post refused, %d bytes of answers unread, %d requests waiting",
                session_id[:12],
                stream.unread,
                stream.waiting,
            )
            return 429, (
                f"this SSE stream holds {stream.unread} bytes of answers its client has not read and "
                f"{stream.waiting} requests not answered yet (limits: --sse-max-unread-bytes {self.max_unread}, "
                f"{self.max_waiting} requests): read the stream, then post again"
            )
        message = ctx.body
        if isinstance(message, dict) and "id" in message and "method" in message:
            stream.waiting += 1
            if stream.session is not None:
                hold(stream.session)
        elif stream.session is not None:
            stream.session.last_active = time.monotonic()
        return None

    def counting_write(self, stream: OpenStream, write: Any) -> Any:
        return _CountingWrite(stream, write)

    def counting_send(self, stream: OpenStream, send: Any) -> Any:
        """The stream's ASGI send: an answer written to the socket is no longer unread."""

        async def counted(message: Any) -> None:
            await send(message)
            if message.get("type") == "http.response.body":
                for _ in range(message.get("body", b"").count(b"event: message")):
                    if stream.sizes:
                        stream.unread -= stream.sizes.popleft()

        return counted

    async def close_when_idle(self, stream: OpenStream) -> None:
        """Close the stream once idle (nothing waiting, nothing posted) past the session idle timeout."""
        if self.admission is None or stream.session is None:
            return
        timeout = self.admission.limits.idle_timeout
        while True:
            await anyio.sleep(min(timeout / 4, 5.0))
            session = stream.session
            if session.busy == 0 and time.monotonic() - session.last_active > timeout:
                logger.info("closing SSE stream idle for %.0f s (--session-idle-timeout)", timeout)
                stream.cancel.cancel()
                return


class _CountingWrite:
    """The write stream the SDK server answers a stream's client through: each answer's size counts as unread
    until the socket has it (`StreamTable.counting_send`); an answer to a request ends that request's wait."""

    def __init__(self, stream: OpenStream, inner: Any) -> None:
        self._stream = stream
        self._inner = inner

    async def send(self, item: Any) -> None:
        stream = self._stream
        message = getattr(item, "message", None)
        if message is not None:
            size = len(message.model_dump_json(by_alias=True, exclude_unset=True))
            stream.unread += size
            stream.sizes.append(size)
            if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and stream.waiting > 0:
                stream.waiting -= 1
                if stream.session is not None:
                    release(stream.session)
        await self._inner.send(item)

    async def __aenter__(self) -> _CountingWrite:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
