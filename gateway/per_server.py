"""Per-server endpoints: every server of the gateway also on a URL of its own, under its own names.

`/servers/<id>/mcp` (streamable HTTP, both protocol eras) and `/servers/<id>/sse` (the old HTTP+SSE
transport, `gateway.sse`) serve one server as if the client spoke to it directly: its tools and
prompts keep their upstream names, whatever `--naming` gives them on `/mcp`. Nothing else differs:
the requests go through the same HTTP edge, session table, SDK server, handlers and fast path as
`/mcp`'s; the handlers (`gateway.front`) only pick the view of the request, the merged catalog or
one server's (`ServerView`), and the router validates, logs, keys and forwards the call exactly as
for `/mcp`. So a call lands under the same cassette key and in the same call log whichever endpoint
it came through; its record says which in `endpoint`.

Harnesses written for one server per URL (MCP-Bench's HTTP client) initialize once to list tools,
then post every `tools/call` on a fresh connection with no session id and `Accept: application/json`
only. The streamable-HTTP spec refuses such a request; a per-server endpoint answers it as a
one-shot request (`OneShot`): in plain JSON, through the same handlers, in the lane its `?run=` /
`X-Run-Id` names (else its connection's). A sessionless GET (their health check) gets the server's
state as JSON.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import mcp_types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

from gateway.catalog import ToolEntry
from gateway.errors import UnknownTargetError, UnknownToolError, UpstreamUnavailable
from gateway.http_guard import PARSED, send_error
from gateway.router import _page

SERVER = "mcpgw.server"  # scope key: the server a per-server request is for
ENDPOINT = "mcpgw.endpoint"  # scope key: the endpoint the call log names (when not the request's path)
ONE_SHOT_VERSION = "2025-03-26"  # what the spec says a server assumes when a request names no version
_SESSION = b"mcp-session-id"
_VERSION = b"mcp-protocol-version"


def endpoint_of(request: Request) -> str:
    """The endpoint a request came through, as the call log names it."""
    return request.scope.get(ENDPOINT) or request.scope.get("path") or "/mcp"


def near_ids(name: str, ids: list[str], limit: int = 3) -> list[str]:
    return difflib.get_close_matches(name, ids, n=limit, cutoff=0.5)


def unknown_server(name: str, ids: list[str]) -> str:
    """One line naming the nearest server ids."""
    near = near_ids(name, ids)
    hint = f"did you mean {' or '.join(repr(i) for i in near)}?" if near else f"servers: {', '.join(sorted(ids)) or 'none'}"
    return f"no server {name!r} on this gateway; {hint}"


class ServerView:
    """One server of the router under its own names: what `/servers/<id>/...` serves.

    The router's API as the front's handlers call it; names are translated to the catalog's
    exposed ones and the router does the rest (validation, call log, lanes, record/replay)."""

    def __init__(self, router: Any, server: str) -> None:
        self.router = router
        self.server = server
        self._version = -1
        self._tools: dict[str, ToolEntry] = {}
        self._tool_list: list[dict[str, Any]] = []
        self._prompts: dict[str, str] = {}  # own name -> exposed name
        self._prompt_list: list[dict[str, Any]] = []

    def _refresh(self) -> None:
        """Rebuilt once per catalog version (the router replaces its catalog on every change)."""
        catalog = self.router.catalog
        if catalog.version == self._version:
            return
        self._tools = {e.name: e for e in catalog.tools.values() if e.server == self.server}
        self._tool_list = [{**e.tool, "name": e.name} for e in self._tools.values()]
        self._prompts = {name: exposed for exposed, (server, name, _) in catalog.prompts.items() if server == self.server}
        self._prompt_list = [{**catalog.prompts[e][2], "name": n} for n, e in self._prompts.items()]
        self._version = catalog.version

    # -- ToolNames (gateway.router): how the router resolves a name called here ---------------

    def tool(self, name: str) -> ToolEntry | None:
        self._refresh()
        return self._tools.get(name)

    def near_tools(self, name: str, limit: int = 3) -> list[str]:
        self._refresh()
        return difflib.get_close_matches(name, list(self._tools), n=limit, cutoff=0.5)

    # -- the router's API, as the front calls it ------------------------------------------------

    async def until_settled(self) -> None:
        """Wait as /mcp's lists do for the first starts to settle; then a server that has nothing
        to serve is an error naming it and why, never an empty list."""
        await self.router.until_settled()
        upstream = self.router.upstreams[self.server]
        if getattr(upstream, "catalog", None) is None:
            status = getattr(upstream, "status", None)
            state = getattr(status, "state", "unavailable")
            reason = getattr(status, "reason", None) or "no reason given"
            raise UpstreamUnavailable(self.server, f"not available ({state}: {reason})")

    def list_tools(self, cursor: str | None) -> dict[str, Any]:
        self._refresh()
        return _page("tools", self._tool_list, cursor, self.router.settings.page_size)

    async def call_tool(self, params: dict[str, Any], caller: Any) -> dict[str, Any]:
        await self.until_settled()
        return await self.router.call_tool(params, caller, self)

    def list_prompts(self, cursor: str | None) -> dict[str, Any]:
        self._refresh()
        return _page("prompts", self._prompt_list, cursor, self.router.settings.page_size)

    async def get_prompt(self, params: dict[str, Any], caller: Any) -> dict[str, Any]:
        await self.until_settled()
        return await self.router.get_prompt({**params, "name": self._exposed_prompt(params.get("name"))}, caller)

    def list_resources(self, cursor: str | None) -> dict[str, Any]:
        own = [r for s, r in self.router.catalog.resources if s == self.server]
        return _page("resources", own, cursor, self.router.settings.page_size)

    def list_resource_templates(self, cursor: str | None) -> dict[str, Any]:
        own = [t for s, t in self.router.catalog.templates if s == self.server]
        return _page("resourceTemplates", own, cursor, self.router.settings.page_size)

    async def read_resource(self, params: dict[str, Any], caller: Any) -> dict[str, Any]:
        await self.until_settled()
        return await self.router.read_resource(params, caller, only=self.server)

    async def subscribe(self, params: dict[str, Any], caller: Any, handle: Any, on: bool) -> dict[str, Any]:
        await self.until_settled()
        return await self.router.subscribe(params, caller, handle, on, only=self.server)

    async def complete(self, params: dict[str, Any], caller: Any) -> dict[str, Any]:
        await self.until_settled()
        ref = params.get("ref") or {}
        if isinstance(ref, dict) and ref.get("type") == "ref/prompt":
            params = {**params, "ref": {**ref, "name": self._exposed_prompt(ref.get("name"))}}
        return await self.router.complete(params, caller, only=self.server)

    async def set_logging_level(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self.router.set_logging_level(params, only=self.server)

    def _exposed_prompt(self, name: Any) -> str:
        self._refresh()
        exposed = self._prompts.get(name) if isinstance(name, str) else None
        if exposed is None:
            near = difflib.get_close_matches(str(name), list(self._prompts), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else f"; known: {sorted(self._prompts)[:20]}"
            raise UnknownTargetError(f"Unknown prompt {name!r} on server {self.server!r}{hint}")
        return exposed


class ServerViews:
    """The view each request is served from: the router itself, or one server's view."""

    def __init__(self, router: Any) -> None:
        self.router = router
        self._views: dict[str, ServerView] = {}

    def of(self, request: Any) -> Any:
        server = request.scope.get(SERVER) if isinstance(request, Request) else None
        if server is None:
            return self.router
        view = self._views.get(server)
        if view is None:
            view = self._views[server] = ServerView(self.router, server)
        return view


class PerServerEndpoint:
    """ASGI: `/servers/<id>/mcp`. Checks the id, marks the request as this server's, answers
    sessionless requests (`OneShot`) and health GETs, and hands the rest to `/mcp`'s stack."""

    def __init__(self, router: Any, mcp_app: Any, one_shot: Any) -> None:
        self.router = router
        self.mcp_app = mcp_app
        self.one_shot = one_shot

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        server = scope.get("path_params", {}).get("server_id", "")
        if not await check_server(self.router, server, send):
            return
        scope[SERVER] = server
        scope[ENDPOINT] = f"/servers/{server}/mcp"
        headers = scope.get("headers", ())
        if not any(k == _SESSION for k, _ in headers) and not _modern(headers):
            if scope["method"] == "GET":
                await _health(self.router, server, send)
                return
            message = scope.get(PARSED)
            if scope["method"] == "POST" and isinstance(message, dict) and message.get("method") != "initialize" \
                    and "result" not in message and "error" not in message:
                await self.one_shot(scope, receive, send)
                return
        await self.mcp_app(scope, receive, send)


async def check_server(router: Any, server: str, send: Any) -> bool:
    if server in router.upstreams:
        return True
    await send_error(send, 404, types.INVALID_REQUEST, unknown_server(server, list(router.upstreams)))
    return False


class OneShot:
    """ASGI: a sessionless request on a per-server endpoint, answered at once in plain JSON by the
    fast path's runner (the same handlers, middleware and result shaping as any `/mcp` request)."""

    def __init__(self, fast: Any) -> None:
        self.fast = fast

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        message = scope[PARSED]
        if "id" not in message:  # a notification outside a session has nobody to reach
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        method = message.get("method")
        if method not in self.fast.handlers:
            await send_error(send, 400, types.INVALID_REQUEST, f"{method!r} needs a session on {scope[ENDPOINT]}: send "
                             f"initialize first (sessionless requests may be {', '.join(sorted(self.fast.handlers))})",
                             request_id=message.get("id"))
            return
        asked = dict(scope.get("headers", ())).get(_VERSION, b"").decode("latin-1")
        version = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else ONE_SHOT_VERSION
        body = await self.fast.answer_one_shot(message, Request(scope, receive), version)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


async def _health(router: Any, server: str, send: Any) -> None:
    """A sessionless GET: what a harness's health check reads (the server's state, as /status says it)."""
    status = router.status()["servers"].get(server, {})
    body = json.dumps({"server": server, "state": status.get("state"), "reason": status.get("reason"),
                       "tools": status.get("exposed_tools"), "endpoint": f"/servers/{server}/mcp"}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _modern(headers: Any) -> bool:
    """A 2026-07-28 request (sessionless by design): the SDK's to answer."""
    for key, value in headers:
        if key == _VERSION:
            return value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
    return False


