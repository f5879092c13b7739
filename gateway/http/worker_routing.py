"""Several worker processes behind one port, each lane served by exactly one of them.

Replay state lives per lane (a tagged run, else one client) inside a process, so
a lane must always reach the same worker for N workers to answer exactly as one
process does. Every worker serves the connections the parent deals it on the
shared port (`gateway.http.connection_handoff`) and listens on a private Unix socket. A request belongs to the worker that
owns its key, in this order:
  1. its handshake session (`mcp-session-id`): sessions are minted by a worker
     with ids it owns, so a session stays where it was initialized;
  2. its tagged run (`?run=` / `X-Run-Id`): owner = hash(run) mod N;
  3. its client identity cookie (`mcpgw-client`), minted by a worker it owns;
  4. nothing of these (a new client): the worker it reached, which then mints
     the client's cookie and connection identity, and any session, as its own.
A request that reached another worker is forwarded over the owner's Unix
socket (plain HTTP/1.1, parsed with httptools), body and streamed answer (SSE
included) unchanged. Requests arriving on
the Unix socket are always served where they arrive (no forwarding loops).
A run tagged only on some requests of a session (the header added after
initialize) is served where its session lives.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httptools

from mcpgw.gateway.sessions.request_context import context_of

# `expect`: this worker has said "100 Continue" and read the whole body already; the owner must not say it again.
_HOP_HEADERS = {
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"te",
    b"upgrade",
    b"proxy-connection",
    b"host",
    b"content-length",
    b"expect",
}

_SERVER_SET = {b"date", b"server"}  # the answering server sets its own


@dataclass(frozen=True)
class Workers:
    index: int  # this worker, 0-based
    count: int
    socket_dir: Path  # holds w<k>.sock for each worker

    def owner(self, key: str) -> int:
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % self.count

    def socket_path(self, index: int) -> Path:
        return self.socket_dir / f"w{index}.sock"

    def mint(self, make: Callable[[], str]) -> str:
        """A fresh token (from `make()`) that this worker owns."""
        while True:
            token = make()
            if self.owner(token) == self.index:
                return token

    def mint_identity(self) -> str:
        return self.mint(lambda: secrets.token_hex(8))

    def mint_session_id(self) -> str:
        return self.mint(lambda: uuid.uuid4().hex)


OWNER_START_WAIT = 30.0  # seconds a forwarded request waits for its owner to start listening


class WorkerRouting:
    """ASGI layer: serve the request here, or forward it to the worker that owns it."""

    def __init__(self, app: Any, workers: Workers, *, everything_to: int | None = None) -> None:
        self.app = app
        self.workers = workers
        self.everything_to = everything_to  # one worker serves every request of this route
        self.forwarded = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if not _over_tcp(scope):  # forwarded by another worker: this one owns it
            await self.app(scope, receive, _tagged(send, b"x-mcpgw-worker", self.workers.index))
            return
        owner = self._owner(scope)
        if owner is None or owner == self.workers.index:
            await self.app(scope, receive, _tagged(send, b"x-mcpgw-worker", self.workers.index))
            return
        self.forwarded += 1
        await self._forward(owner, scope, receive, _tagged(send, b"x-mcpgw-forwarded-by", self.workers.index))

    def hot_head(self, head: Any) -> bool:
        """Served here untouched when this worker owns the session (a hot head names one, over TCP)."""
        owner = self.everything_to if self.everything_to is not None else self.workers.owner(head.session_id)
        return owner == self.workers.index

    def _owner(self, scope: dict[str, Any]) -> int | None:
        if self.everything_to is not None:
            return self.everything_to
        ctx = context_of(scope)
        if ctx.session_id:
            return self.workers.owner(ctx.session_id)
        if ctx.run:
            return self.workers.owner(ctx.run)
        identity = ctx.cookie_identity
        if identity:
            return self.workers.owner(identity)
        return None

    async def _connect(self, owner: int) -> Any:
        """The owner's Unix socket; while the workers start together, the owner's may not exist yet:
        wait for it (bounded) rather than fail a request the owner would answer a moment later."""
        path = str(self.workers.socket_path(owner))
        with anyio.move_on_after(OWNER_START_WAIT):
            while True:
                try:
                    return await anyio.connect_unix(path)
                except (FileNotFoundError, ConnectionRefusedError):
                    await anyio.sleep(0.05)  # polling a socket file another process creates
                except OSError as exc:
                    return exc
        try:
            return await anyio.connect_unix(path)
        except OSError as exc:
            return exc

    async def _forward(self, owner: int, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Relay the request to its owner over the owner's Unix socket, and the answer back as it streams.

        Plain HTTP/1.1 with `Connection: close` on a fresh socket, the answer parsed by httptools (as uvicorn
        parses requests): a forwarded request costs little more than the bytes it carries."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        # The path as the client called it: a per-server endpoint's (rewritten to the shared path by
        # gateway.endpoints.per_server.ServerPaths) must reach the owner as that server's, not as /mcp.
        ctx = context_of(scope)
        called = ctx.endpoint if ctx.server is not None else None
        target = quote(called).encode() if called else scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        lines = [scope["method"].encode() + b" " + target + b" HTTP/1.1"]
        lines += [
            k + b": " + v for k, v in scope.get("headers", ()) if k.lower() not in _HOP_HEADERS or k.lower() == b"host"
        ]
        lines += [b"content-length: " + str(len(body)).encode(), b"connection: close"]
        answer = _Answer()
        parser = answer.parser = httptools.HttpResponseParser(answer)
        stream = await self._connect(owner)
        if isinstance(stream, OSError):
            await _unreachable(send, owner, stream)
            return
        started = False
        async with stream:
            try:
                await stream.send(b"\r\n".join(lines) + b"\r\n\r\n" + bytes(body))
                while not answer.complete:
                    try:
                        data = await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        break
                    parser.feed_data(data)
                    if answer.headers is not None and not started:
                        headers = [
                            (k.lower(), v) for k, v in answer.headers if k.lower() not in _HOP_HEADERS | _SERVER_SET
                        ]
                        await send(
                            {"type": "http.response.start", "status": parser.get_status_code(), "headers": headers}
                        )
                        started = True
                    while started and answer.chunks:
                        await send({"type": "http.response.body", "body": answer.chunks.pop(0), "more_body": True})
            except (OSError, httptools.HttpParserError) as exc:
                if not started:
                    await _unreachable(send, owner, exc)
                    return
        if not started:
            await _unreachable(send, owner, ConnectionError("no answer"))
            return
        await send({"type": "http.response.body", "body": b""})


class _Answer:
    """httptools callbacks: the answer's headers once complete, then its body chunks as they come. An
    interim answer (1xx) before it is passed over: it is not the answer, and its end is not the answer's."""

    def __init__(self) -> None:
        self.parser: Any = None  # the httptools parser feeding these callbacks
        self.headers: list[tuple[bytes, bytes]] | None = None
        self._pending: list[tuple[bytes, bytes]] = []
        self._interim = False
        self.chunks: list[bytes] = []
        self.complete = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self._pending.append((bytes(name), bytes(value)))

    def on_headers_complete(self) -> None:
        if self.parser.get_status_code() < 200:
            self._pending, self._interim = [], True
            return
        self.headers = self._pending

    def on_body(self, body: bytes) -> None:
        self.chunks.append(bytes(body))

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self.complete = True


async def _unreachable(send: Any, owner: int, exc: BaseException) -> None:
    text = f'{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"worker {owner} unreachable: {type(exc).__name__}"}}}}'
    await send({"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": text.encode()})


def _tagged(send: Any, header: bytes, index: int) -> Any:
    """Say in the answer which worker served it (or forwarded it): for people and tests."""
    value = str(index).encode()

    async def tagged_send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), (header, value)]}
        await send(message)

    return tagged_send


def _over_tcp(scope: dict[str, Any]) -> bool:
    server = scope.get("server")
    return isinstance(server, (tuple, list)) and len(server) == 2 and server[1] is not None
