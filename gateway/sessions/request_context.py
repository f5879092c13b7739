"""What the gateway knows about one HTTP request, decided once and carried in the ASGI scope.

Every layer of the pipeline (gateway.endpoints.pipeline) and every handler used to read the same headers again:
the session id in five places, the run id and the client identity in three. Here the headers are
decoded once, at the outermost layer, into a `RequestContext` kept in the scope under `CONTEXT`; the
layers behind fill in what they decide (the guard the parsed body, client identity the identity, the
transport JSON-or-SSE) and read what the others decided. A scope copied by a layer (`{**scope, ...}`)
shares the same context object, so what is decided holds for the whole request.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

CONTEXT = "mcpgw.context"  # scope key
CONNECTION = "mcpgw.connection"  # scope key: the request's TCP connection (`Connection`), set by the HTTP protocol
COOKIE = "mcpgw-client"  # the cookie naming an untagged client (gateway.sessions.client_identity)
_NOT_PARSED = object()


class Connection:
    """One TCP connection, as the requests on it see it (gateway.endpoints.http_app's protocol puts it in each scope): what
    belongs to the connection and to no other lives here, and goes with it (an untagged client's identity)."""

    __slots__ = ("identity",)

    def __init__(self) -> None:
        self.identity: str | None = None


@dataclass(slots=True, eq=False)
class RequestContext:
    headers: dict[str, str]  # decoded once (ASGI servers hand names over lowercased)
    query: bytes = b""
    server: str | None = None  # the server of a per-server endpoint (gateway.endpoints.per_server), None on /mcp
    endpoint: str | None = None  # the path as the client called it (None: the scope's path)
    message: Any = _NOT_PARSED  # the JSON body of every POST, parsed once (strictly) by the guard
    client: str | None = None  # an untagged sessionless client's identity (gateway.sessions.client_identity)
    json_answer: bool = False  # answer in plain JSON rather than SSE (gateway.endpoints.transport)
    inflight: Any = None  # its entry in the table of ids in flight (gateway.sessions.request_ids)
    extra: dict[str, Any] = field(default_factory=dict)
    path_run: str | None = (
        None  # the run a `/runs/<id>/...` path names (gateway.sessions.run_paths); last: others are positional
    )

    @property
    def session_id(self) -> str | None:
        return self.headers.get("mcp-session-id")

    @property
    def protocol_version(self) -> str | None:
        return self.headers.get("mcp-protocol-version")

    @property
    def modern(self) -> bool:
        """A 2026-07-28 request: its version in a header, no session."""
        version = self.protocol_version
        return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS

    @property
    def parsed(self) -> bool:
        return self.message is not _NOT_PARSED

    @property
    def body(self) -> Any:
        """The parsed message, or None when there is none (not a POST of an MCP message, or not parsed)."""
        return None if self.message is _NOT_PARSED else self.message

    @property
    def run(self) -> str | None:
        """The run a request names: its path's `/runs/<id>`, else `?run=`, else the `X-Run-Id` header."""
        if self.path_run is not None:
            return self.path_run
        if b"run=" in self.query:
            named = parse_qs(self.query.decode("latin-1")).get("run", [""])[0]
            if named:
                return named
        return self.headers.get("x-run-id") or None

    @property
    def cookie_identity(self) -> str | None:
        """The identity a valid `mcpgw-client` cookie carries."""
        cookie = self.headers.get("cookie")
        if not cookie:
            return None
        for part in cookie.split(";"):
            key, _, value = part.strip().partition("=")
            if key == COOKIE and _valid_identity(value):
                return value
        return None

    @property
    def caller(self) -> str:
        """Who an untagged request comes from: its MCP session (handshake era), else its identity."""
        if self.session_id:
            return f"session-{self.session_id}"
        return f"client-{self.client}" if self.client else "anonymous"


def _valid_identity(value: str) -> bool:
    return 8 <= len(value) <= 64 and value.isascii() and all(c.isalnum() or c in "_-" for c in value)


def context_of(scope: Any) -> RequestContext:
    """The request's context, made on first use (a layer tested alone, a route served without the pipeline)."""
    ctx: RequestContext | None = scope.get(CONTEXT)
    if ctx is None:
        # Several headers of one name (Cookie) are joined; Host is checked for duplicates by the guard.
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", ()):
            name = key.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[name] = f"{headers[name]}; {text}" if name == "cookie" and name in headers else text
        ctx = scope[CONTEXT] = RequestContext(headers, scope.get("query_string", b""))
    return ctx


def of_request(request: Any) -> RequestContext | None:
    """The context of a Starlette request (a handler's `ctx.request`); None over stdio."""
    scope = getattr(request, "scope", None)
    return context_of(scope) if isinstance(scope, dict) and scope.get("type") == "http" else None


def with_message(scope: Any, message: Any) -> Any:
    """A copy of the scope whose context carries another message (a layer that rewrites the body)."""
    return {**scope, CONTEXT: dataclasses.replace(context_of(scope), message=message)}


def posted_json(scope: Any) -> Any:
    """The JSON a POST carried, as the HTTP guard parsed it (gateway.endpoints.http_guard: RFC 8259 only, no NaN, no
    overflow to infinity, no lone surrogate); None for an empty body. The one body reader of every POST route:
    no handler parses a body itself, so no route can take what the guard refuses."""
    ctx = scope.get(CONTEXT)
    if ctx is None or not ctx.parsed:
        raise RuntimeError("a POST body read before the HTTP guard parsed it (gateway.endpoints.http_guard)")
    return ctx.message
