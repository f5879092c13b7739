"""The front: the gateway as an MCP server, over streamable HTTP and stdio.

Built on the SDK's low-level `Server`, which serves both protocol eras
(handshake versions and 2026-07-28) and shapes each result for the client's
version. Handlers read the raw params (`ctx.params`) and return the router's
wire dicts; `GatewayError`s become JSON-RPC errors here and nowhere else.
Lists wait for the upstreams' first start to settle. Over HTTP: gateway.endpoints.http_app.
"""

from __future__ import annotations

import logging
import signal
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.caching import CACHEABLE_METHODS, CacheableMethod, CacheHint
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from mcpgw.gateway import __version__
from mcpgw.gateway.endpoints import fast_path, per_server
from mcpgw.gateway.endpoints.http_app import SHUTDOWN_GRACE, GatewayHttpProtocol, bound_port, build_http_app, serve_http  # noqa: F401
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.http.stopping import exit_now
from mcpgw.gateway.routing.router import Caller, Router
from mcpgw.gateway.routing.tool_calls import iso_time
from mcpgw.gateway.runtime.secrets import scrub
from mcpgw.gateway.sessions.request_context import of_request
from mcpgw.gateway.sessions.request_params import describe_invalid
from mcpgw.gateway.sessions.sdk_adapter import connection_of
from mcpgw.gateway.sessions.sessions import SessionDirectory, SessionTable
from mcpgw.gateway.stdio.stdio_guard import AnsweredIds, CheckedLines, answer_refusals

logger = logging.getLogger(__name__)

# Requests an upstream may send back to its client, with their typed shapes.
_RELAYED: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}

Handler = Callable[[Any, Any], Awaitable[Any]]


def build_server(router: Router, default_run: str = "default") -> GatewayServer:
    def guarded(fn: Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]) -> Handler:
        async def handler(ctx: Any, _typed: Any) -> dict[str, Any]:
            try:
                result = await fn(ctx, dict(ctx.params or {}))
            except GatewayError as exc:  # an upstream's error text may quote its key: scrubbed like logs
                raise MCPError(code=exc.code, message=scrub(exc.message), data=scrub(exc.data)) from None
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and "resultType" not in result:
                # Required at 2026-07-28; upstreams (and cassettes) of the handshake era never send it.
                result = {**result, "resultType": "complete"}
            return result

        return handler

    def caller(ctx: Any) -> Caller:
        kept = ctx.kept if type(ctx) is fast_path.FastContext else None
        if kept is None:
            return _caller(router, ctx, default_run, sessions)
        if kept.caller is None:  # decided by the head and its session: once for every request repeating the head
            kept.caller = _caller(router, ctx, default_run, sessions)
        return kept.caller

    def server_of(ctx: Any) -> str | None:
        """The server of a per-server endpoint (gateway.endpoints.per_server), None on /mcp."""
        kept = ctx.kept if type(ctx) is fast_path.FastContext else None
        return per_server.server_of(ctx.request) if kept is None else kept.server

    def call_tool(ctx: Any, params: dict[str, Any]) -> Awaitable[dict[str, Any]]:
        return router.call_tool(params, caller(ctx), server_of(ctx))  # awaited by `guarded`: no coroutine between

    async def list_tools(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        caller(ctx)  # registers the client for list_changed notifications
        server = server_of(ctx)
        await router.until_settled(server)
        return router.list_tools(params.get("cursor"), server)

    async def list_prompts(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        await router.until_settled(server_of(ctx))
        return router.list_prompts(params.get("cursor"), server_of(ctx))

    async def get_prompt(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.get_prompt(params, caller(ctx), server_of(ctx))

    async def list_resources(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        await router.until_settled(server_of(ctx))
        return router.list_resources(params.get("cursor"), server_of(ctx))

    async def list_templates(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        await router.until_settled(server_of(ctx))
        return router.list_resource_templates(params.get("cursor"), server_of(ctx))

    async def read_resource(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.read_resource(params, caller(ctx), server_of(ctx))

    async def subscribe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.subscribe(params, caller(ctx), _client_handle(router, ctx), True, server_of(ctx))

    async def unsubscribe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.subscribe(params, caller(ctx), _client_handle(router, ctx), False, server_of(ctx))

    async def complete(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.complete(params, caller(ctx), server_of(ctx))

    async def set_level(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        _client_handle(router, ctx)
        return await router.set_logging_level(params)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # logging is deprecated in 2026-07-28 but live for handshake clients
        server = GatewayServer(
            "mcpgw",
            version=__version__,
            instructions="mcpgw: tools of several MCP servers behind one endpoint, named <server>__<tool>.",
            get_tool_input_schema=router.tool_input_schema,
            # 2026-07-28 results carry cache hints; ours change on list_changed, so they are never fresh.
            # (mcp_types declares the set as frozenset[str]; its members are the CacheableMethod literals)
            cache_hints={cast(CacheableMethod, m): CacheHint(0, "private") for m in CACHEABLE_METHODS},
            on_list_tools=guarded(list_tools),
            on_call_tool=guarded(call_tool),
            on_list_prompts=guarded(list_prompts),
            on_get_prompt=guarded(get_prompt),
            on_list_resources=guarded(list_resources),
            on_list_resource_templates=guarded(list_templates),
            on_read_resource=guarded(read_resource),
            on_subscribe_resource=guarded(subscribe),
            on_unsubscribe_resource=guarded(unsubscribe),
            on_completion=guarded(complete),
            on_set_logging_level=guarded(set_level),
            # 2026-07-28 clients learn of changes on `subscriptions/listen` streams: the router publishes to its bus.
            on_subscriptions_listen=ListenHandler(router.event_bus),
        )
    sessions: SessionTable = {}  # filled by the HTTP front's session admission (gateway.sessions.sessions)
    directory = SessionDirectory(sessions)
    # These replace the SDK's (no-op) OpenTelemetry middleware; they run around its check of a request's params.
    server.middleware = [_MalformedCalls(router, caller), directory]
    # The hot requests, for the fast path: the same handlers the SDK calls.
    ping = server.get_request_handler("ping")
    hot = {"tools/call": guarded(call_tool), "tools/list": guarded(list_tools)}
    if ping is not None:
        hot["ping"] = ping.handler
    server.fast_path = fast_path.FastPath(server, hot, sessions)
    return server


_NOTIFY_ALL = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


class GatewayServer(Server[Any]):
    """The SDK's low-level server, with the fast path beside it and list_changed advertised.

    Every transport (the HTTP session manager included) asks the server for its options; ours advertise
    list_changed, since upstream changes are relayed."""

    fast_path: fast_path.FastPath | None = None

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        return super().create_initialization_options(notification_options or _NOTIFY_ALL, *args, **kwargs)


class _MalformedCalls:
    """Logs a tools/call the SDK refuses as malformed before any handler runs (its params are not a tool call's:
    `arguments` a string, no `name`), so the call log holds every call an agent made, as it promises."""

    def __init__(self, router: Router, caller: Callable[[Any], Caller]) -> None:
        self.router = router
        self.caller = caller

    def on_fast_path(self, method: str) -> bool:
        return False  # the fast path checks a request's params before it runs anything (it declines what fails)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            await self.router.log_malformed(
                ctx.params, self.caller(ctx), per_server.server_of(ctx.request), describe_invalid(exc)
            )
            raise


def initialization_options(server: Server[Any]) -> Any:
    return server.create_initialization_options()


def _caller(router: Router, ctx: Any, default_run: str, sessions: SessionTable) -> Caller:
    run_id, identity, opened = None, "stdio", None  # a stdio gateway has exactly one client
    request = ctx.request
    http = of_request(request)
    if http is not None:  # decided once per request by the pipeline (gateway.sessions.request_context)
        run_id = http.run
        identity = http.caller
        session = sessions.get(http.session_id) if http.session_id else None
        opened = iso_time(session.opened) if session is not None else None
    # per_server.endpoint_of(request), with the context already found
    endpoint = (
        (http.endpoint or request.scope.get("path", "/mcp"))
        if http is not None and isinstance(request, Request)
        else per_server.endpoint_of(request)
    )
    client = ctx.session.client_params
    meta = (ctx.params or {}).get("_meta") or {}
    caller = Caller(
        run_id=run_id or default_run,
        tagged=bool(run_id),
        session_id=identity,
        client_name=client.client_info.name if client is not None and client.client_info else None,
        protocol_version=ctx.protocol_version,
        endpoint=endpoint,
        session_opened=opened,
    )
    if isinstance(meta, dict) and meta.get("progressToken") is not None:
        caller.on_progress = ctx.session.report_progress
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        _client_handle(router, ctx)
        caller.relay = _relay_for(ctx)
    return caller


def _client_handle(router: Router, ctx: Any) -> Any:
    """Remember a handshake-era connection so list changes and updates can reach it."""
    connection = connection_of(ctx.session)
    if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return router.register_client(connection, connection.notify)


def _relay_for(ctx: Any) -> Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]:
    session, request_id = ctx.session, ctx.request_id  # not the context: a kept caller must not keep its request

    async def relay(method: str, params: dict[str, Any]) -> dict[str, Any]:
        shapes = _RELAYED.get(method)
        if shapes is None:
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"{method} is not relayed by the gateway")
        request_model, result_model = shapes
        request = request_model.model_validate({"method": method, "params": params}, by_name=False)
        result: BaseModel = await session.send_request(
            request, result_model, metadata=ServerMessageMetadata(related_request_id=request_id)
        )
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    return relay


async def serve_stdio(router: Router, server: Server[Any], running: Callable[[], None] | None = None) -> None:
    from mcp.server.stdio import stdio_server

    serving = anyio.CancelScope()
    async with anyio.create_task_group() as watch:

        async def stop_on_signal() -> None:
            # Outside the servers' lifetime, so a second Ctrl-C is heard during their shutdown too.
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for sig in signals:
                    if serving.cancel_called and sig == signal.SIGINT:
                        exit_now()
                    serving.cancel()

        watch.start_soon(stop_on_signal)
        with serving:
            async with router.running():
                if running is not None:
                    running()  # the upstreams are starting: `until_settled` means something now
                # A bad line is answered, not dropped; at the end of input the answers still owed are awaited, as
                # long as a call may take once the servers have settled (gateway.stdio.stdio_guard).
                lines = CheckedLines(drain_timeout=router.settings.ready_timeout + router.settings.max_call_timeout)
                # (stdio_server reads lines from it as from anyio's AsyncFile, which it is not)
                async with stdio_server(stdin=lines) as (read, write), anyio.create_task_group() as refusing:  # type: ignore[arg-type]
                    refusing.start_soon(answer_refusals, lines.refusals, write)
                    await server.run(read, AnsweredIds(write, lines), initialization_options(server))
                    refusing.cancel_scope.cancel()
        watch.cancel_scope.cancel()
