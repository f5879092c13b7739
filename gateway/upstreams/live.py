"""LiveUpstream: one long-lived MCP client connection to one server, supervised.

Each upstream runs in its own task (`run`), reports ready to nobody but its
own status, and is restarted with capped exponential backoff when it dies.
A server that lacks a declared env var is unavailable with that reason and is
never started. Requests to stdio servers go through `gateway.upstreams.stdio_rpc` (plain
dicts), to HTTP/SSE servers through the SDK's dict-level `JSONRPCDispatcher`;
either way results reach the router exactly as the server wrote them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp.shared.dispatcher import DispatchContext
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import CONNECTION_CLOSED, METHOD_NOT_FOUND
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from mcpgw.gateway import __version__
from mcpgw.gateway.errors.tree import (
    RESPONSE_TOO_LARGE,
    ResponseTooLarge,
    UpstreamCrashed,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from mcpgw.gateway.runtime.deadlines import Deadline, Scoped
from mcpgw.gateway.specs.server_spec import ServerSpec, expand_env
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog, fetch_catalog, refresh_list
from mcpgw.gateway.upstreams.child_env import child_env
from mcpgw.gateway.upstreams.events import CatalogChangedFn, NotificationFn
from mcpgw.gateway.upstreams.installs import Installs
from mcpgw.gateway.upstreams.isolation import state_dir, uses_state_dir, with_state_dir
from mcpgw.gateway.upstreams.stdio_rpc import StdioRpc
from mcpgw.gateway.upstreams.stdio_transport import ProcessInfo, stdio_process
from mcpgw.gateway.upstreams.upstream import CallOptions, Reply, Status

logger = logging.getLogger(__name__)

_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


class LiveUpstream:
    def __init__(
        self,
        spec: ServerSpec,
        settings: Settings,
        installs: Installs,
        *,
        on_notification: NotificationFn | None = None,
        on_catalog_changed: CatalogChangedFn | None = None,
    ) -> None:
        self.name = spec.id
        self.spec = spec
        self.settings = settings
        self._installs = installs  # where an installed entry starts from (gateway.upstreams.installs)
        self.status = Status()
        self.catalog: ServerCatalog | None = None
        self._on_notification = on_notification
        self._on_catalog_changed = on_catalog_changed
        self._dispatcher: Any = None  # StdioRpc, or the SDK's JSONRPCDispatcher (gateway.runtime.deadlines.Scoped)
        self._process: ProcessInfo | None = None
        self._inflight: list[CallOptions] = []  # most recent last: where server->client requests go
        self._scope: anyio.CancelScope | None = None
        self._ready = anyio.Event()
        self._stopping = False
        self._started_at = 0.0

    # -- supervision -----------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the server connected until `aclose`; never raises."""
        own_state_dir = None
        if uses_state_dir(self.spec):  # not given one by a PerRunUpstream: this instance gets its own
            own_state_dir = state_dir(self.name)
            self.spec = with_state_dir(self.spec, own_state_dir, self._installs)
        try:
            await self._supervise(task_status)
        finally:
            if own_state_dir is not None:
                shutil.rmtree(own_state_dir, ignore_errors=True)

    async def _supervise(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        with anyio.CancelScope() as self._scope:
            task_status.started()
            self._started_at = anyio.current_time()
            missing = [n for n in self.spec.env_required if not os.environ.get(n)]
            self.status.missing_keys = missing
            if missing and self.settings.require_keys:
                self.status.set("unavailable", f"missing {', '.join(missing)} (--require-keys)")
                self._ready.set()
                return
            uninstalled = False  # an npx / uvx entry install never located (then a failed start says so)
            if self.spec.build is not None:
                built = self._installs.installed_spec(self.spec)
                if built is None:
                    assert self.spec.source is not None
                    failed = self._installs.failed_info(self.spec)
                    why = (
                        f"build failed at step {failed.get('step')}: {failed.get('detail')}"
                        if failed
                        else f"not built: run `mcpgw servers install --servers {self.name}`"
                    )
                    self.status.set("unavailable", f"{why} (source {self.spec.source.label})")
                    self._ready.set()
                    return
                self.spec = built
            elif self.spec.transport == "stdio":
                uninstalled = self._installs.not_installed(self.spec)
                self.spec = self._installs.direct_spec(self.spec)  # no package resolution at start when installed
            if self.spec.cwd and not os.path.isdir(self.spec.cwd):
                pin = self.spec.pin
                source = f" (a checkout of {pin.repo} at commit {pin.commit})" if pin and pin.repo else ""
                self.status.set("unavailable", f"source not present: no directory {self.spec.cwd!r}{source}")
                self._ready.set()
                return
            if (self.spec.transport == "stdio" or self.spec.command) and shutil.which(self.spec.command or "") is None:
                self.status.set("unavailable", f"command not found: {self.spec.command!r}")
                self._ready.set()
                return
            delay = self.settings.restart_backoff
            last_reason: str | None = None
            while not self._stopping:
                was_ready = False
                try:
                    was_ready = await self._connect_and_serve()
                except Exception as exc:  # noqa: BLE001 - every failure becomes a status, never a crash
                    reason = _explain(exc, self._process)
                    if "network" in self.spec.flags:
                        reason = f"needs the network, which did not answer: {reason}"
                    if uninstalled:  # its runner could not find the package with the registries off
                        reason = f"not installed: run `{self.settings.install_command}` ({reason})"
                    self.status.set("unavailable", reason)
                    # Retries repeat the same failure: say it once, and again only when it changes.
                    level = logging.WARNING if reason != last_reason else logging.DEBUG
                    logger.log(level, "server %s: %s", self.name, reason)
                    last_reason = reason
                finally:
                    self._dispatcher = None
                if self._stopping:
                    break
                if was_ready:
                    delay = self.settings.restart_backoff  # it worked for a while: restart promptly
                    why = f"exited (code {self._process.returncode if self._process else '?'}): " + (
                        self._process.last_words() if self._process else ""
                    )
                    self.status.set("restarting", why.strip(": "))
                self.status.restarts += 1
                self._ready.set()
                await anyio.sleep(delay)
                delay = min(delay * 2, self.settings.restart_backoff_max)
                if self.status.state == "unavailable":
                    self.status.reason = f"{self.status.reason} (retrying)"
        self.status.set("stopped")

    async def _connect_and_serve(self) -> bool:
        self.status.set("restarting" if self.status.restarts else "starting", self.status.reason)
        async with AsyncExitStack() as stack:
            read, write = await self._open_transport(stack)
            dispatcher: Any = (
                StdioRpc(read, write)
                if self.spec.transport == "stdio"
                else Scoped(JSONRPCDispatcher(read, write, on_stream_exception=self._on_stream_exception))
            )
            closed = anyio.Event()  # set when the connection ends (the dispatcher's run returns)

            async def serve_connection(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                try:
                    await dispatcher.run(self._on_request, self._on_notify, task_status=task_status)
                finally:
                    closed.set()

            async with anyio.create_task_group() as tg:
                await tg.start(serve_connection)
                with anyio.fail_after(self.settings.start_timeout):
                    init = await dispatcher.send_raw_request(
                        "initialize",
                        {
                            "protocolVersion": LATEST_HANDSHAKE_VERSION,
                            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}},
                            "clientInfo": {"name": "mcpgw", "version": __version__},
                        },
                        {"cancel_on_abandon": False},
                    )
                    await dispatcher.notify("notifications/initialized", None)
                    self.catalog = await fetch_catalog(self.name, dispatcher, init)
                self._dispatcher = dispatcher
                self.status.server_info = init.get("serverInfo")
                self.status.protocol_version = init.get("protocolVersion")
                self.status.tools = len(self.catalog.tools)
                if self.status.start_seconds is None:
                    self.status.start_seconds = round(anyio.current_time() - self._started_at, 2)
                self.status.set("ready")
                self._ready.set()
                if self._on_catalog_changed is not None:
                    await self._on_catalog_changed(self.name, "all")
                await closed.wait()  # serve until the connection ends
                tg.cancel_scope.cancel()
        return True

    async def _open_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.transport == "stdio":
            env = child_env(spec)
            read, write, info = await stack.enter_async_context(
                stdio_process([spec.command or "", *spec.args], env, spec.cwd, self.settings.max_response_bytes)
            )
            self._process = info
            self.status.pid = info.pid
            return read, write
        if spec.command:  # a server the gateway runs itself, then reaches at its url
            from mcpgw.gateway.upstreams.http_launch import serving, with_free_port

            spec = with_free_port(spec)  # a fresh loopback port at every start, when the entry asks for one
            await stack.enter_async_context(serving(spec, self.settings.start_timeout))
        headers = {k: expand_env(v) for k, v in spec.headers.items()}
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            streams = await stack.enter_async_context(sse_client(spec.url or "", headers=headers))
        else:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            streams = await stack.enter_async_context(streamable_http_client(spec.url or "", http_client=client))
        return streams[0], streams[1]

    async def wait_ready(self, timeout: float) -> None:
        """Wait until the first start attempt has settled (ready or not)."""
        with anyio.move_on_after(timeout):
            await self._ready.wait()

    async def aclose(self) -> None:
        self._stopping = True
        if self._scope is not None:
            self._scope.cancel()

    # -- requests --------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> Reply:
        dispatcher = self._dispatcher
        if dispatcher is None or self.status.state != "ready":
            raise UpstreamUnavailable(
                self.name, f"not available ({self.status.state}: {self.status.reason or 'no reason given'})"
            )
        options = options or CallOptions()
        timeout = options.timeout or self.spec.timeout or self.settings.call_timeout
        hard_limit = max(timeout, options.max_timeout or self.settings.max_call_timeout)
        loop = asyncio.get_running_loop()
        started = loop.time()  # anyio's clock (`anyio.current_time()`), looked up for less
        deadline = Deadline(started + timeout)  # kept by the dispatcher (gateway.runtime.deadlines)
        opts: dict[str, Any] = {"deadline": deadline}
        if options.on_progress is not None:
            client_progress = options.on_progress

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                # Progress proves the server is alive: extend the silence limit, never past the hard limit.
                deadline.extend(min(loop.time() + timeout, started + hard_limit))
                await client_progress(progress, total, message)

            opts["on_progress"] = on_progress
        self._inflight.append(options)
        try:
            return Reply(await dispatcher.send_raw_request(method, params, opts))
        except MCPError as exc:
            raise self._map_error(exc) from None
        except TimeoutError:
            waited = loop.time() - started
            raise UpstreamTimeout(
                self.name,
                f"no answer to {method} after {waited:.1f}s (limit {timeout:g}s without "
                f"progress, {hard_limit:g}s in all)",
            ) from None
        finally:
            self._inflight.remove(options)

    def _map_error(self, exc: MCPError) -> Exception:
        if exc.code == CONNECTION_CLOSED:
            words = self._process.last_words() if self._process else ""
            return UpstreamCrashed(
                self.name, "connection lost while the call was in flight" + (f"; server said: {words}" if words else "")
            )
        if exc.code == RESPONSE_TOO_LARGE:
            return ResponseTooLarge(self.name, exc.message)
        return UpstreamRejected(self.name, exc.code, exc.message, exc.data)

    # -- traffic the server starts ---------------------------------------------

    async def _on_request(self, dctx: DispatchContext[Any], method: str, params: Any) -> dict[str, Any]:
        """Requests from the server to its client: relayed to the client whose call is in flight."""
        if method == "ping":
            return {}
        for options in reversed(self._inflight):
            if options.relay is not None:
                return await options.relay(method, dict(params or {}))
        if self._inflight:  # a call is in flight, but its client cannot be asked
            raise MCPError(
                code=METHOD_NOT_FOUND,
                message=f"{method}: the client of the call in flight cannot take it "
                "(the gateway relays server-to-client requests to handshake-era clients only)",
            )
        raise MCPError(code=METHOD_NOT_FOUND, message=f"{method}: no client call is in flight to relay it to")

    async def _on_notify(self, dctx: DispatchContext[Any], method: str, params: Any) -> None:
        params = dict(params or {})
        kind = _LIST_CHANGED.get(method)
        if kind is not None and self._dispatcher is not None and self.catalog is not None:
            try:
                await refresh_list(self.catalog, self._dispatcher, kind)
                self.status.tools = len(self.catalog.tools)
            except MCPError as exc:
                logger.warning("server %s: refreshing %s after list_changed failed: %s", self.name, kind, exc)
            if self._on_catalog_changed is not None:
                await self._on_catalog_changed(self.name, kind)
            return
        if self._on_notification is not None:
            await self._on_notification(self.name, method, params)

    async def _on_stream_exception(self, exc: Exception) -> None:
        logger.debug("server %s: unreadable message: %s", self.name, exc)


def _explain(exc: BaseException, process: ProcessInfo | None) -> str:
    words = process.last_words() if process else ""
    if isinstance(exc, TimeoutError):
        base = "did not finish the MCP handshake in time"
    elif isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        code = process.returncode if process else None
        base = f"exited during start-up (code {code})" if code is not None else "closed the connection during start-up"
    elif isinstance(exc, OSError):
        base = f"could not start: {exc}"
    elif isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else exc
        return _explain(inner, process)
    else:
        base = f"{type(exc).__name__}: {exc}"
    return f"{base}; stderr: {words}" if words else base
