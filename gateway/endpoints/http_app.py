"""The gateway over HTTP: the Starlette app behind its pipeline (gateway.endpoints.pipeline), and uvicorn serving it.

Beside the MCP endpoint: `/status` (per-server state), `/healthz` (liveness, at once) and `/readyz`
(200 once every server's first start has settled), the old SSE transport, mcprouter's REST API and the
model routes. The layers every request crosses are declared in `OUTER` / `endpoint_layers` below.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpgw.gateway import __version__
from mcpgw.gateway.endpoints import hot_lane, per_server, router_api
from mcpgw.gateway.endpoints import sse as sse_module
from mcpgw.gateway.endpoints.fast_path import FastPath
from mcpgw.gateway.endpoints.http_guard import GuardPolicy, HttpGuard, default_allowed_hosts
from mcpgw.gateway.endpoints.pipeline import Layer, assemble
from mcpgw.gateway.endpoints.sse import SseEndpoints
from mcpgw.gateway.endpoints.sse_streams import StreamTable
from mcpgw.gateway.endpoints.transport import AnswerPolicy, transport_factory
from mcpgw.gateway.http import connection_handoff, worker_routing
from mcpgw.gateway.http.hot_protocol import HotLaneProtocol
from mcpgw.gateway.http.http_head_limits import HeadLimitsProtocol
from mcpgw.gateway.http.http_timeouts import HeaderDeadlineProtocol
from mcpgw.gateway.http.stopping import exit_now
from mcpgw.gateway.http.write_coalescing import CoalescedWritesProtocol
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.runtime.secrets import scrub
from mcpgw.gateway.sessions.client_identity import ClientIdentity
from mcpgw.gateway.sessions.request_ids import InflightIds
from mcpgw.gateway.sessions.sdk_adapter import GatewaySessionManager
from mcpgw.gateway.sessions.sessions import SessionAdmission, SessionLimits

SHUTDOWN_GRACE = 5.0  # seconds in-flight HTTP requests get to finish at shutdown


def endpoint_layers(
    router: Router,
    limits: SessionLimits,
    path: str,
    sessions: Any,
    default_run: str,
    workers: worker_routing.Workers | None,
) -> list[Layer]:
    """The MCP endpoint's pipeline, outermost first; the SDK's session manager is behind the last."""
    return [
        # each lane reaches the one worker that owns it (the owner admits its sessions)
        Layer.of(worker_routing.WorkerRouting, when=workers is not None, workers=workers),
        Layer.of(per_server.KnownServers, router=router),  # an unknown /servers/<id>: 404 naming the nearest
        Layer.of(SessionAdmission, limits=limits, mcp_path=path, sessions=sessions),  # room for new sessions
        Layer.of(InflightIds),  # one answer per request id (the one table of ids in flight)
        # every untagged client gets a replay lane of its own (with workers: an identity this worker owns)
        Layer.of(ClientIdentity, mint=workers.mint_identity if workers else None),
        Layer.of(per_server.OneShot, router=router, default_run=default_run),  # sessionless per-server calls
    ]


def outer_layers(guard: GuardPolicy, endpoints: tuple[str, ...]) -> list[Layer]:
    """Every route's pipeline: /servers/<id>/mcp is /mcp for every layer behind the first (its context
    made there, once), then the guard (Host/Origin, token, body checks; the body parsed once)."""
    return [Layer.of(per_server.ServerPaths, endpoints=endpoints), Layer.of(HttpGuard, policy=guard)]


def build_http_app(
    router: Router,
    server: Server[Any],
    host: str,
    path: str = "/mcp",
    on_shutdown: Callable[[], None] | None = None,
    response_mode: str = "adaptive",
    routes: list[Route] | None = None,
    *,
    guard: GuardPolicy | None = None,
    limits: SessionLimits | None = None,
    workers: worker_routing.Workers | None = None,
    default_run: str = "default",
) -> Any:
    """The Starlette app behind its pipeline."""
    guard = guard or GuardPolicy(allowed_hosts=default_allowed_hosts(host), mcp_path=path)
    guard = dataclasses.replace(guard, envelope_paths=(*guard.envelope_paths, *router_api.PATHS))
    limits = limits or SessionLimits()
    hot: hot_lane.HotLane | None = None
    fast: FastPath | None = getattr(server, "fast_path", None)
    sessions = fast.sessions if fast is not None else {}
    # The fast path answers hot requests that get plain JSON; MCPGW_FAST_PATH=off is for side-by-side measurements.
    enabled = response_mode in ("adaptive", "json") and os.environ.get("MCPGW_FAST_PATH", "on") != "off"
    policy = AnswerPolicy(
        mode=response_mode,
        fast_path=fast if enabled else None,
        sessions=sessions,
        mint_session_id=workers.mint_session_id if workers else None,
    )
    # Host/Origin are checked by the guard for every route; the SDK's own check would only repeat it.
    manager = GatewaySessionManager(
        app=server,
        json_response=response_mode == "json",
        session_idle_timeout=limits.idle_timeout,
        max_request_body_size=guard.max_body,
        max_sessions=limits.max_sessions + 64,
        make_transport=transport_factory(policy),
    )
    endpoint, layers = assemble(
        StreamableHTTPASGIApp(manager), endpoint_layers(router, limits, path, sessions, default_run, workers)
    )
    admission, ids, one_shot = layers[SessionAdmission], layers[InflightIds], layers[per_server.OneShot]
    routing = layers.get(worker_routing.WorkerRouting)

    # The old HTTP+SSE transport, for every server (/sse) and per server (/servers/<id>/sse): gateway.endpoints.sse.
    sse = SseEndpoints(server, max_body=guard.max_body, workers=workers, streams=StreamTable(admission))
    sse_routes = []
    for sse_path, sse_app in ((sse_module.STREAM, sse.stream_app), (sse_module.MESSAGES, sse.messages_app)):
        route_app: Any = per_server.KnownServers(sse_app, router)
        if workers is not None:
            route_app = worker_routing.WorkerRouting(route_app, workers)
        sse_routes.append(Route(sse_path, route_app))

    def status_body() -> dict[str, Any]:
        body = {
            **router.status(),
            "http": {
                "sessions": admission.stats(),
                "refused": dict(outer[HttpGuard].refused),
                "one_shot": one_shot.served,
                "duplicate_ids_rejected": ids.rejected,
                "colliding_ids_aliased": ids.aliased,
            },
        }
        if fast is not None:  # hot requests answered by the fast path, and those it left to the SDK
            body["fast_path"] = {"enabled": policy.fast_path is fast, "served": fast.served, "declined": fast.declined}
        if hot is not None:  # of those, answered at the HTTP protocol (gateway.endpoints.hot_lane)
            body["hot_lane"] = {
                "served": hot.served,
                "declined": hot.declined,
                "at_once": hot.started_at_once,
                "repeated_heads": hot.repeated_heads,
            }
        if routing is not None:  # this worker's view: --workers N answers /status from whichever worker is reached
            body["worker"] = {
                "index": routing.workers.index,
                "count": routing.workers.count,
                "forwarded": routing.forwarded,
            }
        return scrub(body)

    async def status(_: Request) -> JSONResponse:
        return JSONResponse(status_body())

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
    api = router_api.RouterApi(router, default_run).routes(mint=workers.mint_identity if workers else None)
    if workers is not None:  # a call's lane lives in the worker that owns it, as on /mcp
        api = [Route(r.path, worker_routing.WorkerRouting(r.app, workers), methods=list(r.methods or ())) for r in api]
    extra = list(routes or [])
    if workers is not None:
        # /v1 replay ties an untagged client to the first recorded conversation no other client follows
        # yet: a choice over all clients, so one worker (the first) makes it, as one process would.
        extra = [
            Route(r.path, worker_routing.WorkerRouting(r.app, workers, everything_to=0), methods=list(r.methods or ()))
            for r in extra
        ]
    app = Starlette(
        routes=[
            Route(path, endpoint=endpoint),
            Route("/status", status),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            *sse_routes,
            *api,
            *extra,
        ],
        lifespan=lifespan,
    )
    wrapped, outer = assemble(app, outer_layers(guard, (path, sse_module.STREAM, sse_module.MESSAGES)))
    wrapped.status_body = status_body  # what /status says, for other readers of it (telemetry's /metrics)
    if policy.fast_path is not None and hot_lane.enabled():
        # What the HTTP protocol answers itself (gateway.http.hot_protocol); serve_http hands it over.
        assert fast is not None  # policy.fast_path is it
        wrapped.hot_lane = hot = hot_lane.HotLane(
            path=path,
            fast=fast,
            policy=policy,
            layers=[*outer.values(), *layers.values()],
            max_body=guard.max_body,
            admission=admission,
            ids=ids,
            manager=manager,
            worker=workers.index if workers is not None else None,
            at_once=lambda: router.answers_at_once,
        )
    return wrapped


def build_model_app(routes: list[Route], guard: GuardPolicy) -> Any:
    """The model routes alone (`routes`: the `/v1` and Azure routes `build_http_app` serves beside `/mcp`) behind the
    same guard (Host/Origin, token, model body limits), and `/healthz`: what `serve --stdio --port N` listens with."""

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "version": __version__})

    app, _ = assemble(Starlette(routes=[Route("/healthz", healthz), *routes]), [Layer.of(HttpGuard, policy=guard)])
    return app


class GatewayHttpProtocol(HotLaneProtocol, HeaderDeadlineProtocol, HeadLimitsProtocol, CoalescedWritesProtocol):
    """uvicorn's HTTP protocol with the hot lane, a deadline and a size cap for request heads, and one send per answer.
    The lane reads first: a read it takes whole (a repeated head's request, or a held body's rest: the parser between
    requests, so no head under way) never reaches the head checks, which would have nothing to count or arm; every
    other read goes on to them and the parser. A head the lane holds back still gets their bookkeeping (`head_complete`)."""


def bound_port(uv_server: Any, asked: int) -> int:
    """The TCP port uvicorn listens on: the one asked for, or the one the system chose for port 0."""
    for server in uv_server.servers if asked == 0 else ():
        for sock in server.sockets:
            name = sock.getsockname()
            if isinstance(name, tuple):
                bound: int = name[1]  # (host, port, ...)
                return bound
    return asked


async def serve_http(
    app: Starlette,
    host: str,
    port: int,
    ready: Callable[[int], None] | None = None,
    sockets: list[Any] | None = None,
    dealt: Any = None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve on host:port, or on the given bound sockets (a worker: its private Unix socket), and on the
    connections the `--workers` parent deals on the channel `dealt` (`gateway.http.connection_handoff`), until
    `stop` is set (then shut down as on SIGTERM), if given."""
    import uvicorn

    # Shutdown is bounded whatever clients do: requests get SHUTDOWN_GRACE seconds to finish, then are cancelled.
    lane = getattr(app, "hot_lane", None)
    protocol = (
        GatewayHttpProtocol if lane is None else type("GatewayHttpProtocol", (GatewayHttpProtocol,), {"hot_lane": lane})
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        ws="none",
        # a number of seconds: uvicorn's annotation says int, its asyncio.wait_for takes a float
        http=protocol,
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )  # type: ignore[arg-type]
    up = anyio.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[Any] | None = None) -> None:
            await super().startup(sockets=sockets)
            up.set()  # listening (or failed: then `started` is False and serve returns)

    uv_server = Server(config)
    first_signal = uv_server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        # The first Ctrl-C shuts down in order (servers stopped, cassettes closed); a second one
        # means now: uvicorn would still wait for that orderly shutdown.
        if uv_server.should_exit and sig == signal.SIGINT:
            exit_now()
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
            up.set()  # a start-up that failed before its end returns here

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await up.wait()
        if uv_server.started and not finished.is_set():
            if dealt is not None:
                connection_handoff.serve_dealt_connections(uv_server, dealt)
            if ready is not None:
                ready(bound_port(uv_server, port))
            if stop is not None:
                await stop.wait()
                uv_server.should_exit = True
