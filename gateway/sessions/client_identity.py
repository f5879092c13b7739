"""Who an untagged HTTP client is, so that every client replays in a lane of its own.

A 2026-07-28 request carries no session, and two untagged clients must never
share a replay lane. This ASGI layer gives each client an identity it keeps:
a cookie (`mcpgw-client`) minted on its first request, which HTTP clients that
keep cookies (the MCP SDK's, httpx, browsers) send back on every later request,
whatever connection it travels on. A request without the cookie belongs to its
TCP connection's identity, minted once per connection and kept on the connection
itself (request_context.Connection, which the HTTP protocol puts in each scope),
so a client that drops cookies still keeps one lane for as long as it keeps its
connection, and no other client ever gets it: not one that later reuses the
source port (busy harnesses do within minutes; the address and port were the key
once, for 600 s, and a second client was keyed on the first one's history). A
handshake-era client is never offered the cookie: its session id already names
it, and a cookie costs every later request of the client's (its HTTP library
matches the cookie jar against each request: 0.15-0.2 ms of the client's CPU
per call with httpx, measured), and its requests pass this layer untouched
(`client_of` reads the session first). Any other request's identity reaches the
handlers in the request's context (gateway.sessions.request_context), never from a header a client could send.
Runs tagged with `?run=` / `X-Run-Id` do not depend on it.

`/mcp` and the model endpoints (`/v1/...`) follow the same rules through
`tagged_run` and `client_of`: a tagged run id is the lane; an untagged client's
lane is `<default run>/<client>` (`gateway.routing.router.Caller.lane`).
"""

from __future__ import annotations

import secrets
from typing import Any

from mcpgw.gateway.sessions.pipeline_verdicts import HotHead
from mcpgw.gateway.sessions.request_context import CONNECTION, COOKIE, Connection, context_of, of_request


class ClientIdentity:
    def __init__(self, app: Any, mint: Any = None) -> None:
        self.app = app
        self._mint = mint or (lambda: secrets.token_hex(8))  # workers mint identities they own

    @staticmethod
    def hot_head(head: HotHead) -> bool:
        return head.session_id is not None  # a handshake session names its client

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        ctx = context_of(scope)
        if ctx.session_id is not None:
            await self.app(scope, receive, send)  # a handshake session names its client (`client_of` reads it first)
            return
        identity = ctx.cookie_identity
        minted = identity is None
        if identity is None:
            identity = self._for_connection(scope)
        ctx.client = identity  # whatever identity header a client sent plays no part
        if minted:
            cookie = f"{COOKIE}={identity}; Path=/; HttpOnly; SameSite=Strict".encode()

            async def send_with_cookie(message: dict[str, Any]) -> None:
                if message.get("type") == "http.response.start" and not any(
                    name.lower() == b"mcp-session-id" for name, _ in message.get("headers", ())
                ):  # a session began
                    message = {**message, "headers": [*message.get("headers", ()), (b"set-cookie", cookie)]}
                await send(message)

            await self.app(scope, receive, send_with_cookie)
        else:
            await self.app(scope, receive, send)

    def _for_connection(self, scope: dict[str, Any]) -> str:
        """The connection's identity, minted at its first untagged request; a request that names no connection
        (an ASGI server other than ours) is a client of its own."""
        connection: Connection | None = scope.get(CONNECTION)
        if connection is None:
            return self._mint()
        if connection.identity is None:
            connection.identity = self._mint()
        return connection.identity


def tagged_run(request: Any) -> str | None:
    """The run id a request names (`?run=`, else the `X-Run-Id` header), if any."""
    ctx = of_request(request)
    return ctx.run if ctx is not None else None


def client_of(request: Any) -> str:
    """Who an untagged request comes from: its MCP session (handshake era), else the identity
    this layer set (cookie or connection), else nobody in particular."""
    ctx = of_request(request)
    return ctx.caller if ctx is not None else "anonymous"


def cookie_identity(scope: dict[str, Any]) -> str | None:
    """The identity a request's cookie carries, if a valid one."""
    return context_of(scope).cookie_identity
