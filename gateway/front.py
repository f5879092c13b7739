"""The front: the gateway as an MCP server, over streamable HTTP and stdio.

Built on the SDK's low-level `Server`, which serves both protocol eras
(handshake versions and 2026-07-28) and shapes each result for the client's
version. Handlers read the raw params (`ctx.params`) and return the router's
wire dicts; `GatewayError`s become JSON-RPC errors here and nowhere else.
Beside the MCP endpoint: `/status` (per-server state), `/healthz` (liveness, at once) and
`/readyz` (200 once every server's first start has settled). Lists wait for that settling.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway import __version__, adaptive_http, client_identity, connection_handoff, fast_path, per_server, router_api, worker_routing
from gateway.errors import GatewayError
from gateway.http_guard import GuardPolicy, HttpGuard, default_allowed_hosts
from gateway.http_head_limits import HeadLimitsProtocol
from gateway import sse as sse_module
from gateway.http_timeouts import HeaderDeadlineProtocol
from gateway.sse import SseEndpoints
from gateway.write_coalescing import CoalescedWritesProtocol
from gateway.request_ids import InflightIds
from gateway.sessions import SessionAdmission, SessionLimits
from gateway.stdio_guard import CheckedLines, answer_refusals
from gateway.router import UPSTREAM_WAIT, Caller, Router
from gateway.secrets import scrub

logger = logging.getLogger(__name__)

# Requests an upstream may send back to its client, with their typed shapes.
_RELAYED = {
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}

Handler = Callable[[Any, Any], Awaitable[Any]]
SHUTDOWN_GRACE = 5.0  # seconds in-flight HTTP requests get to finish at shutdown


def build_server(router: Router, default_run: str = "default") -> Server[Any]:
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
        return _caller(router, ctx, default_run)

    # `server_of(ctx.request)`: the server of a per-server endpoint (gateway.per_server), None on /mcp.
    async def call_tool(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.call_tool(params, caller(ctx), per_server.server_of(ctx.request))

    async def list_tools(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        caller(ctx)  # registers the client for list_changed notifications
        await router.until_settled(per_server.server_of(ctx.request))
        return router.list_tools(params.get("cursor"), per_server.server_of(ctx.request))

    async def list_prompts(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        await router.until_settled(per_server.server_of(ctx.request))
        return router.list_prompts(params.get("cursor"), per_server.server_of(ctx.request))

    async def get_prompt(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.get_prompt(params, caller(ctx), per_server.server_of(ctx.request))

    async def list_resources(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        await router.until_settled(per_server.server_of(ctx.request))
        return router.list_resources(params.get("cursor"), per_server.server_of(ctx.request))

    async def list_templates(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        await router.until_settled(per_server.server_of(ctx.request))
        return router.list_resource_templates(params.get("cursor"), per_server.server_of(ctx.request))

    async def read_resource(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.read_resource(params, caller(ctx), per_server.server_of(ctx.request))

    async def subscribe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.subscribe(params, caller(ctx), _client_handle(router, ctx), True,
                                      per_server.server_of(ctx.request))

    async def unsubscribe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.subscribe(params, caller(ctx), _client_handle(router, ctx), False,
                                      per_server.server_of(ctx.request))

    async def complete(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return await router.complete(params, caller(ctx), per_server.server_of(ctx.request))

    async def set_level(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        _client_handle(router, ctx)
        return await router.set_logging_level(params)

    # 2026-07-28 clients learn of changes on `subscriptions/listen` streams; the router publishes to this bus.
    bus = InMemorySubscriptionBus()
    router.event_bus = bus
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # logging is deprecated in 2026-07-28 but live for handshake clients
        server: Server[Any] = Server(
            "mcpgw",
            version=__version__,
            instructions="mcpgw: tools of several MCP servers behind one endpoint, named <server>__<tool>.",
            get_tool_input_schema=router.tool_input_schema,
            # 2026-07-28 results carry cache hints; ours change on list_changed, so they are never fresh.
            cache_hints={m: CacheHint(0, "private") for m in CACHEABLE_METHODS},
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
            on_subscriptions_listen=ListenHandler(bus),
        )
    directory = fast_path.SessionDirectory()
    server.middleware = [_OwnWorkTimer(router), directory]  # replaces the SDK's (no-op) OpenTelemetry middleware
    # The hot requests, for the fast path: the same handlers the SDK calls.
    ping = server.get_request_handler("ping")
    hot = {"tools/call": guarded(call_tool), "tools/list": guarded(list_tools)}
    if ping is not None:
        hot["ping"] = ping.handler
    server.fast_path = fast_path.FastPath(server, hot, directory)  # type: ignore[attr-defined]
    # Every transport (the HTTP session manager included) asks the server for its
    # options; ours advertise list_changed, since upstream changes are relayed.
    plain = server.create_initialization_options
    server.create_initialization_options = lambda *a, **k: plain(  # type: ignore[method-assign]
        a[0] if a else k.pop("notification_options", _NOTIFY_ALL), *a[1:], **k
    )
    return server


_NOTIFY_ALL = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


class _OwnWorkTimer:
    """Times each tools/call through the whole server chain (params checks, handler, result
    shaping), minus the time spent waiting on the upstream: the gateway's own work."""

    def __init__(self, router: Router) -> None:
        self.router = router

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        box = [0.0]
        token = UPSTREAM_WAIT.set(box)
        started = time.perf_counter()
        try:
            return await call_next(ctx)
        finally:
            self.router.own_work_s.append(time.perf_counter() - started - box[0])
            UPSTREAM_WAIT.reset(token)


def initialization_options(server: Server[Any]) -> Any:
    return server.create_initialization_options()


def _caller(router: Router, ctx: Any, default_run: str) -> Caller:
    run_id, identity = None, "stdio"  # a stdio gateway has exactly one client
    request = ctx.request
    if isinstance(request, Request):
        run_id = client_identity.tagged_run(request)
        identity = client_identity.client_of(request)
    client = ctx.session.client_params
    meta = (ctx.params or {}).get("_meta") or {}
    caller = Caller(
        run_id=run_id or default_run,
        tagged=bool(run_id),
        session_id=identity,
        client_name=client.client_info.name if client is not None and client.client_info else None,
        protocol_version=ctx.protocol_version,
        endpoint=per_server.endpoint_of(request),
    )
    if isinstance(meta, dict) and meta.get("progressToken") is not None:
        caller.on_progress = ctx.session.report_progress
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        _client_handle(router, ctx)
        caller.relay = _relay_for(ctx)
    return caller


def _client_handle(router: Router, ctx: Any) -> Any:
    """Remember a handshake-era connection so list changes and updates can reach it."""
    connection = getattr(ctx.session, "_connection", None)  # no public accessor in mcp 2.3
    if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return router.register_client(connection, connection.notify)


def _relay_for(ctx: Any) -> Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]:
    async def relay(method: str, params: dict[str, Any]) -> dict[str, Any]:
        shapes = _RELAYED.get(method)
        if shapes is None:
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"{method} is not relayed by the gateway")
        request_model, result_model = shapes
        request = request_model.model_validate({"method": method, "params": params}, by_name=False)
        result = await ctx.session.send_request(
            request, result_model, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    return relay


def build_http_app(
    router: Router, server: Server[Any], host: str, path: str = "/mcp", on_shutdown: Callable[[], None] | None = None,
    response_mode: str = "adaptive", routes: list[Route] | None = None, *, guard: GuardPolicy | None = None,
    limits: SessionLimits | None = None, workers: worker_routing.Workers | None = None, default_run: str = "default",
) -> Any:
    """The Starlette app, wrapped in the HTTP guard (Host/Origin, token, body checks) as a whole."""
    guard = guard or GuardPolicy(allowed_hosts=default_allowed_hosts(host), mcp_path=path)
    guard = dataclasses.replace(guard, envelope_paths=(*guard.envelope_paths, *router_api.PATHS))
    limits = limits or SessionLimits()
    if response_mode == "adaptive":
        adaptive_http.install()
    # The fast path answers hot requests that get plain JSON; MCPGW_FAST_PATH=off is for side-by-side measurements.
    enabled = response_mode in ("adaptive", "json") and os.environ.get("MCPGW_FAST_PATH", "on") != "off"
    fast_path.install(getattr(server, "fast_path", None) if enabled else None, always_json=response_mode == "json",
                      mint_session_id=workers.mint_session_id if workers else None)
    # Host/Origin are checked by the guard for every route; the SDK's own check would only repeat it.
    manager = StreamableHTTPSessionManager(
        app=server, json_response=response_mode == "json", session_idle_timeout=limits.idle_timeout,
        max_request_body_size=guard.max_body, max_sessions=limits.max_sessions + 64,
    )
    mcp_app: Any = StreamableHTTPASGIApp(manager)
    if response_mode == "adaptive":
        mcp_app = adaptive_http.AdaptiveResponses(mcp_app)
    # Sessionless requests on a per-server endpoint (MCP-Bench's HTTP client) are answered one-shot.
    one_shot = per_server.OneShot(mcp_app, router, default_run)
    # Every untagged client gets a replay lane of its own (with workers: an identity this worker owns).
    mcp_app = client_identity.ClientIdentity(one_shot, mint=workers.mint_identity if workers else None)
    ids = InflightIds(mcp_app)
    admission = SessionAdmission(ids, limits, path)
    endpoint: Any = per_server.KnownServers(admission, router)
    routing = None
    if workers is not None:  # each lane reaches the one worker that owns it (the owner admits its sessions)
        endpoint = routing = worker_routing.WorkerRouting(endpoint, workers)

    # The old HTTP+SSE transport, for every server (/sse) and per server (/servers/<id>/sse): gateway.sse.
    sse = SseEndpoints(server, max_body=guard.max_body, workers=workers)
    sse_routes = []
    for sse_path, app in ((sse_module.STREAM, sse.stream_app), (sse_module.MESSAGES, sse.messages_app)):
        app = per_server.KnownServers(app, router)
        if workers is not None:
            app = worker_routing.WorkerRouting(app, workers)
        sse_routes.append(Route(sse_path, app))

    async def status(_: Request) -> JSONResponse:
        body = {**router.status(), "http": {
            "sessions": admission.stats(), "refused": dict(guard_layer.refused), "one_shot": one_shot.served,
            "duplicate_ids_rejected": ids.rejected, "colliding_ids_aliased": ids.aliased}}
        fast = getattr(server, "fast_path", None)
        if fast is not None:  # hot requests answered by the fast path, and those it left to the SDK
            body["fast_path"] = {"enabled": fast_path.FastTransport.fast_path is fast, "served": fast.served,
                                 "declined": fast.declined}
        if routing is not None:  # this worker's view: --workers N answers /status from whichever worker is reached
            body["worker"] = {"index": routing.workers.index, "count": routing.workers.count, "forwarded": routing.forwarded}
        return JSONResponse(scrub(body))

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "version": __version__})

    async def readyz(_: Request) -> JSONResponse:
        # 200 once every server's first start has settled (ready or unavailable); 503 before.
        if router.settled:
            return JSONResponse({"ready": True})
        return JSONResponse({"ready": False, "starting": router.pending_servers()}, status_code=503)

    @asynccontextmanager
    async def lifespan(_: Starlette):  # type: ignore[no-untyped-def]
        # Cleanup lives here: uvicorn re-raises SIGTERM once the lifespan has ended.
        try:
            async with router.running():
                async with manager.run():
                    yield
        finally:
            if on_shutdown is not None:
                on_shutdown()

    # mcprouter's REST API (/v1/list-servers ...): beside the model routes under /v1, no path shared.
    api = router_api.RouterApi(router, default_run).routes(
        mint=workers.mint_identity if workers else None)
    if workers is not None:  # a call's lane lives in the worker that owns it, as on /mcp
        api = [Route(r.path, worker_routing.WorkerRouting(r.app, workers), methods=list(r.methods or ())) for r in api]
    extra = list(routes or [])
    if workers is not None:
        # /v1 replay ties an untagged client to the first recorded conversation no other client follows
        # yet: a choice over all clients, so one worker (the first) makes it, as one process would.
        extra = [Route(r.path, worker_routing.WorkerRouting(r.app, workers, everything_to=0), methods=list(r.methods or ()))
                 for r in extra]
    app = Starlette(
        routes=[Route(path, endpoint=endpoint), Route("/status", status), Route("/healthz", healthz),
                Route("/readyz", readyz), *sse_routes, *api, *extra],
        lifespan=lifespan,
    )
    guard_layer = HttpGuard(app, guard)
    # /servers/<id>/mcp is /mcp for every layer behind this one (gateway.per_server).
    return per_server.ServerPaths(guard_layer, (path, sse_module.STREAM, sse_module.MESSAGES))


async def serve_stdio(router: Router, server: Server[Any], running: Callable[[], None] | None = None) -> None:
    from mcp.server.stdio import stdio_server

    serving = anyio.CancelScope()
    async with anyio.create_task_group() as watch:

        async def stop_on_signal() -> None:
            # Outside the servers' lifetime, so a second Ctrl-C is heard during their shutdown too.
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for sig in signals:
                    if serving.cancel_called and sig == signal.SIGINT:
                        _exit_now()
                    serving.cancel()

        watch.start_soon(stop_on_signal)
        with serving:
            async with router.running():
                if running is not None:
                    running()  # the upstreams are starting: `until_settled` means something now
                lines = CheckedLines()  # a bad line is answered, not dropped (gateway.stdio_guard)
                async with stdio_server(stdin=lines) as (read, write), anyio.create_task_group() as refusing:
                    refusing.start_soon(answer_refusals, lines.refusals, write)
                    await server.run(read, write, initialization_options(server))
                    refusing.cancel_scope.cancel()
        watch.cancel_scope.cancel()


def _exit_now() -> None:
    from gateway.stdio_transport import kill_all_now

    print("mcpgw: second interrupt: killing the servers and exiting now", file=sys.stderr)
    kill_all_now()
    os._exit(130)


class GatewayHttpProtocol(HeaderDeadlineProtocol, HeadLimitsProtocol, CoalescedWritesProtocol):
    """uvicorn's HTTP protocol with a deadline and a size cap for request heads, and one send per answer."""


def bound_port(uv_server: Any, asked: int) -> int:
    """The TCP port uvicorn listens on: the one asked for, or the one the system chose for port 0."""
    for server in uv_server.servers if asked == 0 else ():
        for sock in server.sockets:
            name = sock.getsockname()
            if isinstance(name, tuple):
                return name[1]
    return asked


async def serve_http(app: Starlette, host: str, port: int, ready: Callable[[int], None] | None = None,
                     sockets: list[Any] | None = None, dealt: Any = None) -> None:
    """Serve on host:port, or on the given bound sockets (a worker: its private Unix socket), and on the
    connections the `--workers` parent deals on the channel `dealt` (`gateway.connection_handoff`)."""
    import uvicorn

    # Shutdown is bounded whatever clients do: requests get SHUTDOWN_GRACE seconds to finish, then are cancelled.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", ws="none",
                            http=GatewayHttpProtocol, timeout_graceful_shutdown=SHUTDOWN_GRACE)
    uv_server = uvicorn.Server(config)
    first_signal = uv_server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        # The first Ctrl-C shuts down in order (servers stopped, cassettes closed); a second one
        # means now: uvicorn would still wait for that orderly shutdown.
        if uv_server.should_exit and sig == signal.SIGINT:
            _exit_now()
        first_signal(sig, frame)

    uv_server.handle_exit = handle_exit  # type: ignore[method-assign]  # uvicorn installs it by attribute
    if ready is None and dealt is None:
        await uv_server.serve(sockets=sockets)
        return
    finished = anyio.Event()

    async def run() -> None:
        try:
            await uv_server.serve(sockets=sockets)
        finally:
            finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not uv_server.started and not finished.is_set():  # a failed start-up returns early
            await anyio.sleep(0.05)
        if uv_server.started:
            if dealt is not None:
                connection_handoff.serve_dealt_connections(uv_server, dealt)
            if ready is not None:
                ready(bound_port(uv_server, port))
