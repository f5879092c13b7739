"""The router: merges the upstreams' catalogs, routes each request to its server,
validates every tools/call inline and writes one call-log record per call.

It is protocol-era neutral and works on wire dicts; `gateway.front` adapts it
to the SDK's server and turns `GatewayError`s into JSON-RPC errors.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import time
import weakref
from contextvars import ContextVar
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

import anyio
import msgpack

from gateway.catalog import Catalog, ToolEntry, build_catalog
from gateway.config import ServerSpec
from gateway.errors import (GatewayError, ReplayDiverged, ReplayMiss, UnknownTargetError, UnknownToolError, UpstreamError,
                            UpstreamTimeout, UpstreamUnavailable)
from gateway.naming import NamingPolicy
from gateway.settings import Settings
from gateway.upstream import CallOptions, ProgressFn, RelayFn
from gateway.validation import UNCHECKED, ValidatorCache

logger = logging.getLogger(__name__)

# Keys of the 2026-07-28 request envelope: they describe the client's hop to
# us, not ours to the upstream (a handshake-era server refuses them).
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"

# Seconds the current tools/call spent waiting on its upstream; read by the
# front's timing middleware to report the gateway's own work per call.
UPSTREAM_WAIT: ContextVar[list[float] | None] = ContextVar("upstream_wait", default=None)


class CallSink(Protocol):
    """Where call records go (the recorder's call log); the router knows nothing more of it."""

    def append(self, record: dict[str, Any]) -> None: ...

    def describe(self) -> dict[str, Any]: ...  # for /status: where it writes, and its health


@dataclass(slots=True)
class Caller:
    """Who is calling: what the call log records about the client side of a request."""

    run_id: str = "default"
    session_id: str = ""  # the client's identity when untagged: handshake session, cookie or connection
    client_name: str | None = None
    protocol_version: str | None = None
    on_progress: ProgressFn | None = None
    relay: RelayFn | None = None
    tagged: bool = False  # the run id came from the client (?run= / X-Run-Id)
    endpoint: str = "/mcp"  # where the call came in: /mcp, /servers/<id>/mcp, /sse, stdio, ... (the call log says)

    @property
    def lane(self) -> str:
        """Replay order and state are kept per run: a tagged run id, else one lane per client."""
        return self.run_id if self.tagged or not self.session_id else f"{self.run_id}/{self.session_id}"


@dataclass
class ClientHandle:
    """A connected client the router can notify (list changes, resource updates, log messages).

    Holds its notify method weakly: the handle must not keep the connection (its key) alive."""

    notify_ref: weakref.WeakMethod
    subscriptions: set[str] = field(default_factory=set)

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        notify = self.notify_ref()
        if notify is not None:
            await notify(method, params)


class Router:
    def __init__(self, specs: list[ServerSpec], upstreams: dict[str, Any], settings: Settings, call_log: CallSink | None) -> None:
        self.specs = {s.id: s for s in specs}
        self.upstreams = upstreams
        self.settings = settings
        self.call_log = call_log
        self.naming = NamingPolicy(mode=settings.naming, separator=getattr(settings, "separator", "__"))
        self.validators = ValidatorCache()
        self.catalog = Catalog()
        self._clients: weakref.WeakKeyDictionary[Any, ClientHandle] = weakref.WeakKeyDictionary()
        self.started_at = time.time()
        self.calls_served = 0
        self.own_work_s: collections.deque[float] = collections.deque(maxlen=20_000)
        self.event_bus: Any = None  # set by the front: change events for 2026-07-28 listen streams
        self.recording: str | None = None  # the cassette played or recorded (set by the app), shown in /status
        self._settled: anyio.Event | None = None  # set in `running` once every first start has ended

    # -- lifecycle ---------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Router]:
        """Start every upstream concurrently, each in its own supervised task; the
        catalog counts as settled once every first start has (see `until_settled`)."""
        self.rebuild_catalog()  # replayed upstreams have their catalog before they run
        self._settled = anyio.Event()
        async with anyio.create_task_group() as tg:
            for upstream in self.upstreams.values():
                await tg.start(upstream.run)
            settling = anyio.CancelScope()

            async def settle() -> None:
                with settling:
                    await self.wait_ready(self.settings.ready_timeout)
                self._settled.set()

            tg.start_soon(settle)
            try:
                yield self
            finally:
                settling.cancel()
                with anyio.CancelScope(shield=True):
                    for upstream in self.upstreams.values():
                        await upstream.aclose()

    @property
    def settled(self) -> bool:
        """True once every upstream's first start has ended (ready or not) or the ready timeout passed."""
        return self._settled is not None and self._settled.is_set()

    async def until_settled(self, server: str | None = None) -> None:
        """Lists wait here during start-up, so no client is handed a partial catalog. `server` (a per-server
        endpoint's): then a server with nothing to serve is an error saying which and why, not an empty list."""
        if self._settled is not None and not self._settled.is_set():
            await self._settled.wait()  # bounded: `settle` sets it by the ready timeout at the latest
        upstream = self.upstreams.get(server) if server is not None else None
        if upstream is not None and getattr(upstream, "catalog", None) is None:
            status = upstream.status
            raise UpstreamUnavailable(server, f"not available ({status.state}: {status.reason or 'no reason given'})")

    def pending_servers(self) -> list[str]:
        """Servers whose first start has not ended yet."""
        return sorted(name for name, up in self.upstreams.items()
                      if getattr(getattr(up, "status", None), "state", None) == "starting")

    async def wait_ready(self, timeout: float) -> None:
        """Wait until every upstream's first start attempt has settled; bounded."""
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams.values():
                    tg.start_soon(upstream.wait_ready, timeout)

    def rebuild_catalog(self) -> bool:
        """Rebuild the merged catalog; True when the tool list changed."""
        servers = [
            (self.specs[name], up.catalog) for name, up in self.upstreams.items() if getattr(up, "catalog", None) is not None
        ]
        new = build_catalog(servers, self.naming, self.validators, self.catalog.version + 1)
        for problem in new.problems:
            logger.warning("catalog: %s", problem)
        changed = [e.tool for e in new.tools.values()] != [e.tool for e in self.catalog.tools.values()]
        prompts_changed = new.prompts != self.catalog.prompts
        resources_changed = new.resources != self.catalog.resources or new.templates != self.catalog.templates
        self.catalog = new
        self._changes = (changed, prompts_changed, resources_changed)
        return changed

    async def on_catalog_changed(self, server: str, kind: str) -> None:
        self.rebuild_catalog()
        from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

        tools, prompts, resources = self._changes
        for method, event, changed in (
            ("notifications/tools/list_changed", ToolsListChanged(), tools),
            ("notifications/prompts/list_changed", PromptsListChanged(), prompts),
            ("notifications/resources/list_changed", ResourcesListChanged(), resources),
        ):
            if changed:
                await self._broadcast(method, None)
                await self._publish(event)

    async def on_notification(self, server: str, method: str, params: dict[str, Any]) -> None:
        """Notifications an upstream sends on its own: log messages and resource updates reach clients."""
        if method == "notifications/message":
            params = {**params, "logger": f"{server}/{params['logger']}" if params.get("logger") else server}
            await self._broadcast(method, params)
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            for handle in list(self._clients.values()):
                if uri in handle.subscriptions:
                    await _quietly(handle.notify(method, params))
            if isinstance(uri, str):
                from mcp.shared.subscriptions import ResourceUpdated

                await self._publish(ResourceUpdated(uri=uri))

    def register_client(self, key: Any, notify: Callable[[str, dict[str, Any] | None], Awaitable[None]]) -> ClientHandle:
        handle = self._clients.get(key)
        if handle is None:
            handle = self._clients[key] = ClientHandle(weakref.WeakMethod(notify))
        return handle

    async def _publish(self, event: Any) -> None:
        if self.event_bus is not None:
            await _quietly(self.event_bus.publish(event))

    async def _broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        for handle in list(self._clients.values()):
            await _quietly(handle.notify(method, params))

    # -- tools ---------------------------------------------------------------------

    def list_tools(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        """All tools under their exposed names, or (`scope`: a per-server endpoint) one server's under its own."""
        tools = self.catalog.tool_list() if scope is None else self.catalog.server_view(scope).tool_list
        start = _cursor_offset(cursor, len(tools))
        end = start + self.settings.page_size
        result: dict[str, Any] = {"tools": tools[start:end]}
        if end < len(tools):
            result["nextCursor"] = str(end)
        return result

    def tool_input_schema(self, exposed: str) -> dict[str, Any] | None:
        entry = self.catalog.tools.get(exposed)
        return entry.tool.get("inputSchema") if entry else None

    async def call_tool(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        """Validate, forward, log. With `scope` (a per-server endpoint) `name` is that server's own tool name;
        the call is then the same call as through the namespaced endpoint, but for the record's `endpoint`."""
        started = time.time()
        t0 = time.perf_counter()
        name = params.get("name")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if scope is not None:  # a per-server endpoint waits for its server's first start, as lists do
            await self.until_settled(scope)
        view = self.catalog.server_view(scope) if scope is not None else None
        tools = self.catalog.tools if view is None else view.tools
        entry = tools.get(name) if isinstance(name, str) else None
        record = self._new_record(caller, started, entry.exposed if entry else name, arguments, entry)
        if view is not None and entry is None:
            record["server"] = scope
        if entry is None and isinstance(name, str) and self._sole_server() is not None and view is None:
            entry = self._passthrough_tool(name)
            record["server"], record["tool"] = entry.server, name
        try:
            if entry is None:
                near = (view or self.catalog).near_tools(str(name))
                if near and view is None:
                    record["server"] = self.catalog.tools[near[0]].server
                record["outcome"] = "rejected"
                raise UnknownToolError(str(name), near)
            checkable = self.settings.validate != "off" and record["known_tool"]  # a passthrough has no schema
            verdict = entry.input.check(arguments) if checkable else UNCHECKED
            record["validation"] = verdict.as_dict()
            if verdict.valid is False and self.settings.validate == "enforce":
                # Per the spec, argument errors are tool results the model can read and correct.
                record["outcome"] = "rejected"
                record["is_error"] = True
                text = f"Invalid arguments for tool {entry.exposed!r}: {verdict.describe()}. The call was not forwarded."
                return {"content": [{"type": "text", "text": text}], "isError": True}
            waited = time.perf_counter()
            options = self._options(entry.server, caller)
            try:
                result = await self._forward(entry, params, arguments, options)
            finally:
                record["source"], record["cassette_key"] = options.source, options.cassette_key
                waited = time.perf_counter() - waited
                record["upstream_ms"] = round(waited * 1000, 3)
                box = UPSTREAM_WAIT.get()
                if box is not None:
                    box[0] = waited
            is_error = bool(result.get("isError"))
            record["is_error"] = is_error
            record["outcome"] = "tool_error" if is_error else "ok"
            record["result_digest"] = _digest(result)
            if self.settings.log_results:  # what the tool returned, for judges reading the log
                record["result"] = _result_text(result, self.settings.log_results)
            if entry.output is not None and not is_error and "structuredContent" in result and self.settings.validate != "off":
                record["output_validation"] = entry.output.check(result["structuredContent"]).as_dict()
            return result
        except (ReplayDiverged, ReplayMiss) as exc:
            record["outcome"] = "diverged" if isinstance(exc, ReplayDiverged) else "miss"
            record["error"] = exc.message
            if self.settings.miss_as_tool_error:  # the agent reads it as the tool's answer and may go on
                record["is_error"] = True
                return {"content": [{"type": "text", "text": exc.message}], "isError": True}
            raise
        except UpstreamTimeout as exc:
            record["outcome"] = "timeout"
            record["error"] = exc.message
            raise
        except UpstreamError as exc:
            record["outcome"] = "upstream_error"
            record["error"] = exc.message
            raise
        except GatewayError as exc:
            record["error"] = exc.message
            raise
        except BaseException as exc:  # cancelled by the client, or a bug: still logged
            record["outcome"] = "upstream_error"
            record["error"] = f"{type(exc).__name__}: call abandoned" if isinstance(exc, anyio.get_cancelled_exc_class()) else repr(exc)
            raise
        finally:
            ended = time.time()
            record["ended_at"] = _iso(ended)
            record["latency_ms"] = round((time.perf_counter() - t0) * 1000, 3)
            self.calls_served += 1
            if self.call_log is not None:
                self.call_log.append(record)

    def _sole_server(self) -> str | None:
        """Bare naming in front of one server: names the catalog lacks are still that server's to answer.

        The gateway then stays transparent: an unknown tool, prompt or resource URI reaches the
        server, and the client gets the server's own answer, as it would without the gateway.
        """
        if self.settings.naming == "bare" and len(self.upstreams) == 1:
            return next(iter(self.upstreams))
        return None

    def _passthrough_tool(self, name: str) -> ToolEntry:
        server = self._sole_server()
        assert server is not None
        return ToolEntry(server, name, name, {"name": name}, self.validators.compile({}), None)

    async def _forward(self, entry: ToolEntry, params: dict[str, Any], arguments: Any, options: CallOptions) -> dict[str, Any]:
        # Every param passes through (e.g. `task`), with the upstream's own tool name.
        out = {k: v for k, v in params.items() if k != "_meta"}
        out["name"], out["arguments"] = entry.name, arguments
        meta = _upstream_meta(params.get("_meta"))
        if meta:
            out["_meta"] = meta
        return await self.upstreams[entry.server].request("tools/call", out, options)

    def _new_record(self, caller: Caller, started: float, name: Any, arguments: Any, entry: ToolEntry | None) -> dict[str, Any]:
        return {
            "run_id": caller.run_id,
            "session_id": caller.session_id,
            "lane": caller.lane,
            "seq": None,
            "started_at": _iso(started),
            "ended_at": None,
            "latency_ms": None,
            "client_name": caller.client_name,
            "protocol_version": caller.protocol_version,
            "server": entry.server if entry else None,
            "tool": entry.name if entry else None,
            "exposed_name": name,
            "arguments": arguments,
            "known_tool": entry is not None,
            "validation": {"valid": None, "errors": []},
            "output_validation": None,
            "outcome": None,
            "is_error": False,
            "error": None,
            "result_digest": None,
            "cassette_key": None,
            "source": None,  # "live" or "replay" once forwarded; a call refused here reached no server
            "input_schema_digest": entry.input.digest if entry else None,
            "upstream_ms": None,
            "endpoint": caller.endpoint,
        }

    # -- prompts, resources, completion, logging -------------------------------------

    def list_prompts(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        prompts = self.catalog.prompts if scope is None else self.catalog.server_view(scope).prompts
        return _page("prompts", [p[2] for p in prompts.values()], cursor, self.settings.page_size)

    async def get_prompt(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        name = params.get("name")
        prompts = self.catalog.prompts if scope is None else self.catalog.server_view(scope).prompts
        target = prompts.get(name) if isinstance(name, str) else None
        if target is None and isinstance(name, str) and self._sole_server() is not None and scope is None:
            target = (self._sole_server(), name, {})
        if target is None:
            raise UnknownTargetError(f"Unknown prompt {name!r}; known: {sorted(prompts)[:20]}")
        server, upstream_name, _ = target
        out = {**params, "name": upstream_name}
        _strip_meta(out)
        return await self.upstreams[server].request("prompts/get", out, self._options(server, caller))

    def list_resources(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        items = [r for _, r in self.catalog.resources] if scope is None else self.catalog.server_view(scope).resources
        return _page("resources", items, cursor, self.settings.page_size)

    def list_resource_templates(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        items = [t for _, t in self.catalog.templates] if scope is None else self.catalog.server_view(scope).templates
        return _page("resourceTemplates", items, cursor, self.settings.page_size)

    def _resource_server(self, uri: Any, scope: str | None = None) -> str:
        if scope is not None:  # a per-server endpoint reads its own server's resources (URIs are not renamed)
            return scope
        server = self.catalog.resource_owner(uri) if isinstance(uri, str) else None
        if server is None and isinstance(uri, str):
            server = self._sole_server()
        if server is None:
            raise UnknownTargetError(f"No server offers resource {uri!r}")
        return server

    async def read_resource(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        server = self._resource_server(params.get("uri"), scope)
        out = dict(params)
        _strip_meta(out)
        return await self.upstreams[server].request("resources/read", out, self._options(server, caller))

    async def subscribe(self, params: dict[str, Any], caller: Caller, handle: ClientHandle | None, on: bool,
                        scope: str | None = None) -> dict[str, Any]:
        uri = params.get("uri")
        server = self._resource_server(uri, scope)
        out = dict(params)
        _strip_meta(out)
        result = await self.upstreams[server].request(
            "resources/subscribe" if on else "resources/unsubscribe", out, self._options(server, caller)
        )
        if handle is not None:
            (handle.subscriptions.add if on else handle.subscriptions.discard)(uri)
        return result

    async def complete(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        ref = params.get("ref") or {}
        out = dict(params)
        _strip_meta(out)
        if ref.get("type") == "ref/prompt":
            prompts = self.catalog.prompts if scope is None else self.catalog.server_view(scope).prompts
            target = prompts.get(ref.get("name"))
            if target is None:
                raise UnknownTargetError(f"Unknown prompt {ref.get('name')!r}")
            server = target[0]
            out["ref"] = {**ref, "name": target[1]}
        else:
            uri = ref.get("uri")
            server = scope or next((s for s, t in self.catalog.templates if t.get("uriTemplate") == uri), None) \
                or self._resource_server(uri)
        return await self.upstreams[server].request("completion/complete", out, self._options(server, caller))

    async def set_logging_level(self, params: dict[str, Any]) -> dict[str, Any]:
        """Forward to every ready upstream that offers logging; one failure does not stop the rest."""
        out = dict(params)
        _strip_meta(out)
        for name, upstream in self.upstreams.items():
            catalog = getattr(upstream, "catalog", None)
            if catalog is not None and "logging" in catalog.capabilities and upstream.status.state == "ready":
                try:
                    await upstream.request("logging/setLevel", out)
                except GatewayError as exc:
                    logger.info("logging/setLevel on %s: %s", name, exc.message)
        return {}

    def _options(self, server: str, caller: Caller) -> CallOptions:
        return CallOptions(
            timeout=self.specs[server].timeout, on_progress=caller.on_progress, relay=caller.relay, lane=caller.lane
        )

    # -- status ----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        servers = {}
        for name, upstream in self.upstreams.items():
            info = upstream.status.as_dict()
            info["exposed_tools"] = sum(1 for e in self.catalog.tools.values() if e.server == name)
            if hasattr(upstream, "run_instances"):  # isolation: run
                info["run_instances"] = upstream.run_instances
            info["title"] = self.specs[name].title if name in self.specs else None
            spec = self.specs.get(name)
            if spec is not None:
                info["built_from"] = _built_from(spec)
            problems = getattr(getattr(upstream, "catalog", None), "problems", None)
            if problems:  # optional lists the server refused: reported, not fatal
                info["list_problems"] = list(problems)
            servers[name] = info
        return {
            "servers": servers,
            "settled": self.settled,
            "tools": len(self.catalog.tools),
            "catalog_version": self.catalog.version,
            "problems": self.catalog.problems,
            "validate": self.settings.validate,
            "naming": self.settings.naming,
            "separator": self.settings.separator,
            "mode": self.settings.mode,
            "recording": self.recording,
            **(self.call_log.describe() if self.call_log else {"cassette": None, "call_log": None}),
            "calls_served": self.calls_served,
            "own_work_us": _percentiles(self.own_work_s),
            "uptime_s": round(time.time() - self.started_at, 1),
        }


def _result_text(result: dict[str, Any], limit: int) -> str:
    """A result's text content (else its JSON), cut to `limit` characters with a note of the cut."""
    parts = [c.get("text", "") for c in result.get("content") or () if isinstance(c, dict) and c.get("type") == "text"]
    text = "\n".join(parts) if parts else json.dumps(result.get("structuredContent", result), ensure_ascii=False,
                                                      sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"
def _built_from(spec: ServerSpec) -> str:
    """Where the server's code comes from, for `mcpgw servers`."""
    if spec.source is not None:
        return f"source {spec.source.label}"
    pin = spec.pin
    if pin is not None and pin.package:
        return f"{pin.registry} {pin.package}@{pin.version}"
    return "command"


def _percentiles(samples: collections.deque[float]) -> dict[str, float] | None:
    if not samples:
        return None
    ordered = sorted(samples)
    pick = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6, 1)  # noqa: E731
    return {"p50": pick(0.50), "p99": pick(0.99), "n": len(ordered)}


def _upstream_meta(meta: Any) -> dict[str, Any] | None:
    if not isinstance(meta, dict):
        return None
    kept = {k: v for k, v in meta.items() if k != "progressToken" and not k.startswith(_ENVELOPE_PREFIX)}
    return kept or None


def _strip_meta(params: dict[str, Any]) -> None:
    meta = _upstream_meta(params.pop("_meta", None))
    if meta:
        params["_meta"] = meta


def _page(key: str, items: list[Any], cursor: str | None, size: int) -> dict[str, Any]:
    start = _cursor_offset(cursor, len(items))
    result: dict[str, Any] = {key: items[start : start + size]}
    if start + size < len(items):
        result["nextCursor"] = str(start + size)
    return result


def _cursor_offset(cursor: str | None, total: int) -> int:
    if not cursor:
        return 0
    try:
        offset = int(cursor)
    except ValueError:
        raise UnknownTargetError(f"invalid cursor {cursor!r}") from None
    if not 0 <= offset <= total:
        raise UnknownTargetError(f"invalid cursor {cursor!r}")
    return offset


def _digest(result: dict[str, Any]) -> str:
    try:
        data = msgpack.packb(result, use_bin_type=True)
    except OverflowError:  # an integer beyond 64 bits (valid JSON)
        data = json.dumps(result, sort_keys=True, default=str).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


_SECOND: list[Any] = [None, ""]  # the last whole second formatted, and its text: two stamps a call, mostly in one second


def _iso(ts: float) -> str:
    """`datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds")`, at a third of its cost."""
    second = int(ts // 1)
    micro = round((ts - second) * 1e6)  # as datetime rounds (half to even), then truncates to milliseconds
    if micro >= 1_000_000:
        second, micro = second + 1, micro - 1_000_000
    if _SECOND[0] != second:
        _SECOND[:] = [second, datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_SECOND[1]}.{micro // 1000:03d}+00:00"


async def _quietly(awaitable: Awaitable[None]) -> None:
    try:
        with anyio.move_on_after(5):
            await awaitable
    except Exception as exc:  # noqa: BLE001 - a gone client must not disturb the others
        logger.debug("notify failed: %s", exc)
