"""Several worker processes behind one port, each lane served by exactly one of them.

Replay state lives per lane (a tagged run, else one client) inside a process, so
a lane must always reach the same worker for N workers to answer exactly as one
process does. Every worker listens on the shared port (the kernel spreads
connections) and on a private Unix socket. A request belongs to the worker that
owns its key, in this order:
  1. its handshake session (`mcp-session-id`): sessions are minted by a worker
     with ids it owns, so a session stays where it was initialized;
  2. its tagged run (`?run=` / `X-Run-Id`): owner = hash(run) mod N;
  3. its client identity cookie (`mcpgw-client`), minted by a worker it owns;
  4. nothing of these (a new client): the worker it reached, which then mints
     the client's cookie and connection identity, and any session, as its own.
A request that reached another worker is forwarded over the owner's Unix
socket, body and streamed answer (SSE included) unchanged. Requests arriving on
the Unix socket are always served where they arrive (no forwarding loops).
A run tagged only on some requests of a session (the header added after
initialize) is served where its session lives.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx

from gateway import client_identity

_HOP_HEADERS = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"proxy-connection", b"host",
                b"content-length"}

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

    def mint(self, make: Any) -> str:
        """A fresh token (from `make()`) that this worker owns."""
        while True:
            token = make()
            if self.owner(token) == self.index:
                return token

    def mint_identity(self) -> str:
        return self.mint(lambda: secrets.token_hex(8))

    def mint_session_id(self) -> str:
        return self.mint(lambda: uuid.uuid4().hex)


class WorkerRouting:
    """ASGI layer: serve the request here, or forward it to the worker that owns it."""

    def __init__(self, app: Any, workers: Workers) -> None:
        self.app = app
        self.workers = workers
        self.forwarded = 0
        self._clients: dict[int, httpx.AsyncClient] = {}

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

    def _owner(self, scope: dict[str, Any]) -> int | None:
        headers = dict(scope.get("headers", ()))
        session = headers.get(b"mcp-session-id")
        if session:
            return self.workers.owner(session.decode("latin-1"))
        run = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("run", [None])[0] or \
            (headers.get(b"x-run-id") or b"").decode("latin-1")
        if run:
            return self.workers.owner(run)
        identity = client_identity.cookie_identity(scope)
        if identity:
            return self.workers.owner(identity)
        return None

    async def _forward(self, owner: int, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        client = self._clients.get(owner)
        if client is None:
            transport = httpx.AsyncHTTPTransport(uds=str(self.workers.socket_path(owner)))
            client = self._clients[owner] = httpx.AsyncClient(transport=transport, timeout=None)
        path = scope.get("raw_path") or scope["path"].encode()
        url = "http://worker" + path.decode("latin-1") + (("?" + scope["query_string"].decode("latin-1")) if scope.get("query_string") else "")
        headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() not in _HOP_HEADERS]
        headers.append((b"host", dict(scope.get("headers", ())).get(b"host", b"127.0.0.1")))
        request = client.build_request(scope["method"], url, headers=headers, content=bytes(body))
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            text = f'{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"worker {owner} unreachable: {type(exc).__name__}"}}}}'
            await send({"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": text.encode()})
            return
        try:
            out = [(k.lower(), v) for k, v in response.headers.raw if k.lower() not in _HOP_HEADERS | _SERVER_SET]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()


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
