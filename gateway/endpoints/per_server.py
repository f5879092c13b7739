"""Per-server endpoints: every server is also served at `/servers/<id>/mcp`, under its own names (and at
mcprouter's proxy URLs `/mcp/<id>` and `/sse/<id>`, aliases of `/servers/<id>/mcp` and `/servers/<id>/sse`).

Harnesses written for one connection per server (MCP-Bench's runner, mcprouter-style clients) reach
each server at a URL of its own and see the names that server gave its tools. Three small layers:

- `ServerPaths` (outermost) rewrites `/servers/<id>/<endpoint>` (or an alias) to `/<endpoint>` and notes the id and
  the path as called in the request's context (gateway.sessions.request_context). Every layer behind it (the guard with its token, Host/Origin and
  body checks, session admission, in-flight ids, client identity, the fast path, the SDK) then treats
  the request exactly as one on the shared endpoint; the handlers read the id (`server_of`) and ask the
  router for that server's part of the catalog. So a call through a server's endpoint is the same call
  (validation, lanes, cassette key, call-log record) as through `/mcp`, but for the record's `endpoint`.
- `KnownServers` (behind the guard: no id is disclosed to a caller without the token) answers an
  unknown id with a 404 naming the nearest ids.
- `OneShot` answers the requests MCP-Bench's HTTP client sends with no session (a `tools/call` posted on
  a fresh connection, `Accept: application/json` only, after one initialize used to list tools) as plain
  JSON, in the lane the query string's `?run=` names (else the client's own). The streamable-HTTP
  spec refuses a sessionless request other than initialize; on a per-server endpoint it is served.
  A sessionless GET there (MCP-Bench's health check) gets the server's state as JSON.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request

from mcpgw.gateway.errors.http_errors import send_error
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.routing.router import Caller, Router
from mcpgw.gateway.runtime.secrets import scrub
from mcpgw.gateway.sessions.pipeline_verdicts import HotHead
from mcpgw.gateway.sessions.request_context import context_of, of_request
from mcpgw.gateway.sessions.request_params import INVALID_PARAMS, params_problem
from mcpgw.gateway.sessions.run_paths import PREFIX, split_run

_PATH = re.compile(r"^/servers/([^/]+)(/.+)$")
# mcprouter's proxy URLs, aliases of the same: /mcp/<id> is /servers/<id>/mcp, /sse/<id> is /servers/<id>/sse (and
# /sse/<id>/messages the message URL its stream names). A shared path (/sse/messages) is never an alias.
_ALIAS = re.compile(r"^(/mcp|/sse)/([^/]+)(/messages)?$")
ONE_SHOT = frozenset({"tools/call", "tools/list", "ping"})


def server_of(request: Any) -> str | None:
    """The server a request's endpoint serves (None on the shared endpoints)."""
    ctx = of_request(request) if isinstance(request, Request) else None
    return ctx.server if ctx is not None else None


def endpoint_of(request: Any) -> str:
    """The path the client called, as the call log records it."""
    if not isinstance(request, Request):
        return "stdio"
    ctx = of_request(request)
    return (ctx.endpoint if ctx is not None else None) or request.scope.get("path", "/mcp")


def split_path(path: str, endpoints: tuple[str, ...]) -> tuple[str, str] | None:
    """`/servers/<id>/mcp` (or mcprouter's `/mcp/<id>`) -> (id, `/mcp`) when `/mcp` is one of `endpoints`;
    None for any other path."""
    if path.startswith("/servers/"):
        match = _PATH.match(path)
        if match is None or match.group(2) not in endpoints:
            return None
        return unquote(match.group(1)), match.group(2)
    alias = _ALIAS.match(path) if path.startswith(("/mcp/", "/sse/")) and path not in endpoints else None
    shared = alias.group(1) + (alias.group(3) or "") if alias is not None else None
    if alias is None or shared not in endpoints:
        return None
    return unquote(alias.group(2)), shared


class ServerPaths:
    def __init__(self, app: Any, endpoints: tuple[str, ...]) -> None:
        self.app = app
        self.endpoints = endpoints  # the shared paths that also exist per server (/mcp, /sse, ...)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            ctx = context_of(scope)  # made here, once, for every layer behind
            tagged = (
                split_run(scope.get("raw_path", b"").decode("latin-1")) if scope["path"].startswith(PREFIX) else None
            )
            if tagged is not None:  # /runs/<id>/<route>: the route, tagged (gateway.sessions.run_paths)
                ctx.path_run = tagged[0]
                scope = {**scope, "path": tagged[1], "raw_path": tagged[1].encode()}
            split = split_path(scope["path"], self.endpoints)
            if split is not None:
                shared = split[1]
                ctx.server, ctx.endpoint = split[0], scope["path"]
                scope = {**scope, "path": shared, "raw_path": shared.encode()}
        await self.app(scope, receive, send)

    def hot_head(self, head: HotHead) -> bool:
        """A run in the path is the pipeline's; a per-server endpoint is its shared one for every layer behind."""
        if head.path.startswith(PREFIX) or "%" in head.path:  # (the lane reads the raw path: nothing decoded)
            return False
        split = split_path(head.path, self.endpoints)
        if split is not None:
            head.server, head.endpoint = split[0], head.path
            head.path, head.raw_path = split[1], split[1].encode()
        return True


def unknown_server(name: str, ids: list[str]) -> str:
    """One line for an unknown server id, naming the nearest ids (else the first few)."""
    near = difflib.get_close_matches(name, ids, n=3, cutoff=0.4)
    hint = f"; nearest: {', '.join(near)}" if near else f"; servers: {', '.join(sorted(ids)[:10])}"
    return f"no server {name!r} behind this gateway{hint}"


class KnownServers:
    def __init__(self, app: Any, router: Router) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        server = context_of(scope).server if scope["type"] == "http" else None
        if server is not None and server not in self.router.specs:
            await send_error(send, 404, -32601, unknown_server(server, list(self.router.specs)))
            return
        await self.app(scope, receive, send)

    def hot_head(self, head: HotHead) -> bool:
        return head.server is None or head.server in self.router.specs


class OneShot:
    def __init__(self, app: Any, router: Router, default_run: str) -> None:
        self.app = app
        self.router = router
        self.default_run = default_run
        self.served = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self._health_check(scope):
            await self._health(scope, send)
            return
        ctx = context_of(scope)
        message, server = ctx.body, ctx.server
        if server is None or not self._qualifies(scope, ctx, message):  # (a per-server request: `_qualifies` asks too)
            await self.app(scope, receive, send)
            return
        run_id = ctx.run
        caller = Caller(
            run_id=run_id or self.default_run,
            tagged=bool(run_id),
            session_id=ctx.caller,
            endpoint=ctx.endpoint or scope.get("path", "/mcp"),
            protocol_version=ctx.protocol_version,
        )
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        method, params = message["method"], message.get("params") or {}
        problem = params_problem(method, ctx.protocol_version, params)
        try:
            if (
                problem is not None
            ):  # refused as the SDK refuses it on a session (`arguments` a string, ...), and logged
                if method == "tools/call":
                    await self.router.log_malformed(params, caller, ctx.server, problem)
                answer["error"] = dict(INVALID_PARAMS)
            else:
                answer["result"] = await self._run(server, method, params, caller)
        except GatewayError as exc:
            error = {"code": exc.code, "message": scrub(exc.message)}
            if exc.data is not None:
                error["data"] = scrub(exc.data)
            answer["error"] = error
        self.served += 1
        body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()  # as compact as the fast path's
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    @staticmethod
    def hot_head(head: HotHead) -> bool:
        return head.session_id is not None  # a request on a session is no one-shot call (nor a health check)

    @staticmethod
    def _health_check(scope: Any) -> bool:
        """A sessionless handshake-era GET on a per-server endpoint: MCP-Bench's check that the server is up."""
        ctx = context_of(scope)
        if ctx.server is None or scope.get("method") != "GET":
            return False
        return ctx.session_id is None and not ctx.modern

    async def _health(self, scope: Any, send: Any) -> None:
        """The server's state as /status says it (a session's GET opens its stream, as on /mcp)."""
        ctx = context_of(scope)
        server = ctx.server
        status = self.router.status()["servers"].get(server, {})
        body = json.dumps(
            {
                "server": server,
                "state": status.get("state"),
                "reason": status.get("reason"),
                "tools": status.get("exposed_tools"),
                "endpoint": ctx.endpoint,
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    @staticmethod
    def _qualifies(scope: Any, ctx: Any, message: Any) -> bool:
        if ctx.server is None or scope.get("method") != "POST":
            return False
        if not isinstance(message, dict) or message.get("method") not in ONE_SHOT or "id" not in message:
            return False
        if not isinstance(message.get("params", {}), dict):
            return False  # the SDK answers a malformed request as it does on /mcp
        if ctx.modern:
            return False  # 2026-07-28 requests carry no session by design: the SDK serves them
        return ctx.session_id is None

    async def _run(self, server: str, method: str, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        if method == "ping":
            return {}
        if method == "tools/list":
            await self.router.until_settled(server)
            return self.router.list_tools(params.get("cursor"), server)
        return await self.router.call_tool(params, caller, server)
