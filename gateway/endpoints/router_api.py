"""mcprouter's REST API on the gateway: `POST /v1/list-servers`, `/v1/get-server`, `/v1/list-tools`,
`/v1/call-tool`, with mcprouter's request and answer shapes (chatmcp/mcprouter: router/api.go,
handler/api/v1/*.go, service/api/context.go, model/server.go, debug/apiv1.http).

    list-servers  {"page"?, "limit"?}                 -> data {"servers": [server, ...]}  (page 1, limit 30)
    get-server    {"name", "author_name"?}            -> data server
    list-tools    {"server"}                          -> data {"tools": [...]}    (MCP's ListToolsResult)
    call-tool     {"server", "name", "arguments"}     -> data {"content": [...], "isError"?, ...}  (MCP's CallToolResult)

Every answer is mcprouter's envelope `{"code": 0, "message": "ok", "data": ...}`; a failure is
`{"code": -1, "message": "..."}`. As in mcprouter, a call that was made and failed (unknown tool, a
server's error, a replay miss or divergence) is an HTTP 200 with code -1; a request that names no
server of ours is a 404, and one that cannot be read a 400/413/415, each in the same envelope. A
server is one of `mcpgw servers`' ids, which this API calls `server_key` (its MCP-Bench title is
accepted too). The bearer key is the gateway's own `--auth-token` (the HTTP guard checks it, and
Host/Origin, before anything here runs).

A call here is the same call as `tools/call` on `/servers/<id>/mcp` or `/mcp`: the router scoped to
the server (its own names: `Router.call_tool(..., scope=<id>)`), so the same validation, lane (`?run=` /
`X-Run-Id`, else the client's own), record/replay/hybrid key and call-log record (`endpoint`
"/v1/call-tool"); a recording made through one surface replays through the others.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response

from mcpgw.gateway.endpoints.per_server import unknown_server
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.routing.router import Caller, Router
from mcpgw.gateway.runtime.secrets import scrub
from mcpgw.gateway.sessions import client_identity
from mcpgw.gateway.sessions.request_context import posted_json
from mcpgw.gateway.specs.server_spec import ServerSpec

LIST_SERVERS = "/v1/list-servers"
GET_SERVER = "/v1/get-server"
LIST_TOOLS = "/v1/list-tools"
CALL_TOOL = "/v1/call-tool"
PATHS = (LIST_SERVERS, GET_SERVER, LIST_TOOLS, CALL_TOOL)
OK, FAIL = 0, -1  # mcprouter's APIErrorSuccess, APIErrorFail
# mcprouter's server rows carry database times; ours have none, so they are Go's zero time, as its JSON writes it.
_NO_TIME = "0001-01-01T00:00:00Z"


class RouterApi:
    def __init__(self, router: Router, default_run: str = "default") -> None:
        self.router = router
        self.default_run = default_run

    def routes(self, mint: Any = None) -> list[Route]:
        """Untagged clients get a lane of their own, as on /mcp and the model routes (`mint`: --workers)."""
        handlers = {
            LIST_SERVERS: self.list_servers,
            GET_SERVER: self.get_server,
            LIST_TOOLS: self.list_tools,
            CALL_TOOL: self.call_tool,
        }
        return [
            Route(path, client_identity.ClientIdentity(request_response(handler), mint=mint), methods=["POST"])
            for path, handler in handlers.items()
        ]

    # -- the four calls --------------------------------------------------------------------

    async def list_servers(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        page, limit = _count(body, "page"), _count(body, "limit")
        if isinstance(page, Response) or isinstance(limit, Response):
            return page if isinstance(page, Response) else limit  # type: ignore[return-value]
        page, limit = page or 1, limit or 30  # mcprouter's defaults for a missing or non-positive value
        await self.router.until_settled()  # descriptions come from the servers' own initialize answers
        ids = sorted(self.router.upstreams)[(page - 1) * limit : page * limit]
        return _ok({"servers": [self._describe(sid) for sid in ids]})

    async def get_server(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        name = _text(body, "name")
        if isinstance(name, Response):
            return name
        sid = self._resolve(name)
        if sid is None:
            return _fail(404, unknown_server(name, list(self.router.upstreams)))
        author = body.get("author_name")
        if author not in (None, "") and author != _author(self.router.specs[sid]):
            return _fail(404, f"server {name!r} is not by {author!r} (author_name {_author(self.router.specs[sid])!r})")
        await self.router.until_settled()
        return _ok(self._describe(sid))

    async def list_tools(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        sid = self._server(body)
        if isinstance(sid, Response):
            return sid
        try:
            await self.router.until_settled(
                sid
            )  # a server with nothing to serve is an error naming why, not an empty list
        except GatewayError as exc:
            return _fail(200, exc.message)
        tools: list[dict[str, Any]] = []
        cursor = None
        while True:  # one answer holds every tool, as mcprouter's does
            page = self.router.list_tools(cursor, sid)
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return _ok({"tools": tools})

    async def call_tool(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        sid = self._server(body)
        if isinstance(sid, Response):
            return sid
        name = _text(body, "name")
        if isinstance(name, Response):
            return name
        arguments = body.get("arguments")
        run = client_identity.tagged_run(request)
        caller = Caller(
            run_id=run or self.default_run,
            tagged=bool(run),
            session_id=client_identity.client_of(request),
            client_name=request.headers.get("x-title") or request.headers.get("user-agent"),
            endpoint=CALL_TOOL,
        )
        if arguments is not None and not isinstance(arguments, dict):  # refused, and logged: the agent made the call
            problem = f'"arguments" must be an object, not {type(arguments).__name__}'
            await self.router.log_malformed({"name": name, "arguments": arguments}, caller, sid, problem)
            return _fail(400, problem)
        try:
            result = await self.router.call_tool({"name": name, "arguments": arguments or {}}, caller, sid)
        except GatewayError as exc:  # the call was made and failed: mcprouter's RespErr
            return _fail(200, exc.message)
        return _ok(result)

    # -- reading requests ------------------------------------------------------------------

    async def _body(self, request: Request) -> dict[str, Any] | Response:
        """The JSON object posted (the HTTP guard has read and parsed it under the size cap and deadline /mcp has).
        An empty body is {} (mcprouter binds nothing then); a body needs `Content-Type: application/json`,
        as its binder does."""
        body = posted_json(request.scope)  # parsed by the HTTP guard, strictly, as on every route
        if body is None:
            return {}
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return _fail(415, "Unsupported Media Type: Content-Type must be application/json")
        if not isinstance(body, dict):
            return _fail(400, f"request body must be a JSON object, not {type(body).__name__}")
        return body

    def _server(self, body: dict[str, Any]) -> str | Response:
        key = _text(body, "server")
        if isinstance(key, Response):
            return key
        sid = self._resolve(key)
        return sid if sid is not None else _fail(404, unknown_server(key, list(self.router.upstreams)))

    def _resolve(self, key: str) -> str | None:
        """A server id (mcprouter's server_key), or the title a benchmark knows it by."""
        if key in self.router.upstreams:
            return key
        return next((sid for sid in self.router.upstreams if self.router.specs[sid].title == key), None)

    def _describe(self, sid: str) -> dict[str, Any]:
        """One of mcprouter's server rows (model/server.go), from the lock entry and the recorded or live
        initialize answer, so a replaying gateway describes a server as the recording one did."""
        spec = self.router.specs[sid]
        upstream = self.router.upstreams.get(sid)
        catalog = upstream.catalog if upstream is not None else None
        init = (catalog.init if catalog is not None else None) or {}
        return {
            "created_at": _NO_TIME,
            "updated_at": _NO_TIME,
            "deleted_at": _NO_TIME,
            "name": sid,
            "author_name": _author(spec),
            "title": spec.display_name,
            "description": init.get("instructions") or "",
            "content": "",
            "server_key": sid,
            "config_name": sid,
        }


def _author(spec: ServerSpec) -> str:
    """Who publishes the server: its repository's owner, else its npm scope, else nobody named."""
    repo = spec.source.repo if spec.source else spec.pin.repo if spec.pin and spec.pin.repo else None
    if repo:
        path = urlsplit(repo).path if "://" in repo else repo
        return path.strip("/").split("/")[0]
    package = spec.pin.package if spec.pin and spec.pin.package else ""
    return package[1:].split("/")[0] if package.startswith("@") else ""


def _text(body: dict[str, Any], field: str) -> str | Response:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        return _fail(
            400,
            f'"{field}" is required: a non-empty string' + ("" if value is None else f", not {json.dumps(value)[:40]}"),
        )
    return value


def _count(body: dict[str, Any], field: str) -> int | Response:
    value = body.get(field, 0)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool):
        return _fail(400, f'"{field}" must be an integer, not {json.dumps(value)[:40]}')
    return max(value, 0)


def _ok(data: Any) -> JSONResponse:
    return JSONResponse({"code": OK, "message": "ok", "data": data})


def _fail(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": FAIL, "message": scrub(message)}, status_code=status)
