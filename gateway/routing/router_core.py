"""The router's core: its state, the upstreams' lifecycle, the merged catalog, and the clients it notifies.

The router's requests are served by the mixins built on `RouterCore`, one concept each:
`gateway.routing.tool_calls` (tools/call and its call-log record), `gateway.routing.forwarding` (prompts,
resources, completion, logging), `gateway.routing.listing` (the paged lists) and `gateway.routing.router_status`
(/status). `gateway.routing.router.Router` assembles them.
"""

from __future__ import annotations

import collections
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

import anyio

from mcpgw.gateway.errors.tree import UnknownTargetError, UpstreamUnavailable
from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import Catalog, build_catalog
from mcpgw.gateway.tools.naming import NamingPolicy, chosen_mode
from mcpgw.gateway.tools.validation import ValidatorCache
from mcpgw.gateway.upstreams.events import UpstreamEvents
from mcpgw.gateway.upstreams.upstream import AnswersAtOnce, CallOptions, ProgressFn, RelayFn, Upstream

if TYPE_CHECKING:
    from mcp.server.subscriptions import SubscriptionBus

T = TypeVar("T")
logger = logging.getLogger("mcpgw.gateway.routing.router")

# Keys of the 2026-07-28 request envelope: they describe the client's hop to
# us, not ours to the upstream (a handshake-era server refuses them).
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"


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
    session_opened: str | None = None  # when its MCP session was opened (ISO time), for a handshake session over HTTP
    # Replay order and state are kept per run: a tagged run id, else one lane per client. Made once (a caller's
    # run and identity do not change; it is read twice a call).
    lane: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.lane = self.run_id if self.tagged or not self.session_id else f"{self.run_id}/{self.session_id}"


@dataclass
class ClientHandle:
    """A connected client the router can notify (list changes, resource updates, log messages).

    Holds its notify method weakly: the handle must not keep the connection (its key) alive."""

    notify_ref: weakref.WeakMethod[Callable[[str, dict[str, Any] | None], Awaitable[None]]]
    subscriptions: set[str] = field(default_factory=set)

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        notify = self.notify_ref()
        if notify is not None:
            await notify(method, params)


TraceCalls = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


class RouterCore:
    def __init__(
        self,
        specs: list[ServerSpec],
        upstreams: dict[str, Upstream],
        settings: Settings,
        call_log: CallSink | None,
        *,
        events: UpstreamEvents | None = None,
        event_bus: SubscriptionBus | None = None,
        recording: str | None = None,
        trace_calls: TraceCalls | None = None,
    ) -> None:
        """`upstreams`: every server's, complete (the router never adds one). `events`: what those upstreams
        report (gateway.upstreams.events), listened to from here. The rest: see each attribute."""
        self.specs = {s.id: s for s in specs}
        self.upstreams = upstreams
        self.settings = settings
        self.call_log = call_log
        self.naming = NamingPolicy(mode=chosen_mode(settings.naming, len(self.specs)), separator=settings.separator)
        self.validators = ValidatorCache()
        self.catalog = Catalog()
        self._clients: weakref.WeakKeyDictionary[Any, ClientHandle] = weakref.WeakKeyDictionary()
        self.started_at = time.time()
        self.calls_served = 0
        # Per tools/call, the handler's time less its wait on the upstream (gateway.routing.tool_calls): /status's own_work_us.
        self.own_work_s: collections.deque[float] = collections.deque(maxlen=20_000)
        if event_bus is None:  # a router of its own: its change events reach whatever listens to its bus
            from mcp.server.subscriptions import InMemorySubscriptionBus

            event_bus = InMemorySubscriptionBus()
        self.event_bus = event_bus  # change events for 2026-07-28 listen streams (the front listens to it)
        self.recording = recording  # the cassette played or recorded, shown in /status
        # When traces are exported (telemetry.tracing.Tracing.begin): given a call's record and params, notes its
        # span's ids in the record and returns the params with `_meta.traceparent` for the upstream.
        self.trace_calls = trace_calls
        self._settled: anyio.Event | None = None  # set in `running` once every first start has ended
        # Whether every upstream answers at once (gateway.upstreams.upstream.AnswersAtOnce): asked once, the set is fixed.
        self._all_at_once = bool(upstreams) and all(
            isinstance(up, AnswersAtOnce) and up.answers_at_once for up in upstreams.values()
        )
        if events is not None:
            events.listen(self.on_notification, self.on_catalog_changed)

    # -- lifecycle ---------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        """Start every upstream concurrently, each in its own supervised task; the
        catalog counts as settled once every first start has (see `until_settled`)."""
        self.rebuild_catalog()  # replayed upstreams have their catalog before they run
        settled = self._settled = anyio.Event()
        async with anyio.create_task_group() as tg:
            for upstream in self.upstreams.values():
                await tg.start(upstream.run)
            settling = anyio.CancelScope()

            async def settle() -> None:
                with settling:
                    await self.wait_ready(self.settings.ready_timeout)
                settled.set()

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

    @property
    def answers_at_once(self) -> bool:
        """Whether a call is answered without waiting on anything: the start-up has settled and every upstream
        answers at once (gateway.upstreams.upstream.AnswersAtOnce: a replay without live fallback). The hot lane then
        answers in the event loop's turn that read the request (gateway.runtime.eager)."""
        return self._all_at_once and self.settled

    async def until_settled(self, server: str | None = None) -> None:
        """Lists wait here during start-up, so no client is handed a partial catalog. `server` (a per-server
        endpoint's): then a server with nothing to serve is an error saying which and why, not an empty list."""
        if self._settled is not None and not self._settled.is_set():
            await self._settled.wait()  # bounded: `settle` sets it by the ready timeout at the latest
        if server is None:
            return
        upstream = self.upstreams.get(server)
        if upstream is not None and upstream.catalog is None:
            status = upstream.status
            raise UpstreamUnavailable(server, f"not available ({status.state}: {status.reason or 'no reason given'})")

    async def found(self, lookup: Callable[[], T]) -> T:
        """`lookup()` of a request's target (a tool, prompt, resource); if it finds nothing (None, or
        UnknownTargetError) while the first starts are under way, again once they have settled: the name may be a
        starting server's (lists wait the same way), and "unknown" would be a wrong answer. Waits only then."""
        try:
            target = lookup()
        except UnknownTargetError:
            if self.settled:
                raise
        else:
            if target is not None or self.settled:
                return target
        await self.until_settled()
        return lookup()

    def pending_servers(self) -> list[str]:
        """Servers whose first start has not ended yet."""
        return sorted(name for name, up in self.upstreams.items() if up.status.state == "starting")

    async def wait_ready(self, timeout: float) -> None:
        """Wait until every upstream's first start attempt has settled; bounded."""
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams.values():
                    tg.start_soon(upstream.wait_ready, timeout)

    def rebuild_catalog(self) -> bool:
        """Rebuild the merged catalog; True when the tool list changed."""
        servers = [(self.specs[name], up.catalog) for name, up in self.upstreams.items() if up.catalog is not None]
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

    def register_client(
        self, key: Any, notify: Callable[[str, dict[str, Any] | None], Awaitable[None]]
    ) -> ClientHandle:
        handle = self._clients.get(key)
        if handle is None:
            handle = self._clients[key] = ClientHandle(weakref.WeakMethod(notify))
        return handle

    async def _publish(self, event: Any) -> None:
        await _quietly(self.event_bus.publish(event))

    async def _broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        for handle in list(self._clients.values()):
            await _quietly(handle.notify(method, params))

    def _sole_server(self) -> str | None:
        """`--naming bare` in front of one server: names the catalog lacks are still that server's to answer.

        The gateway then stays transparent: an unknown tool, prompt or resource URI reaches the
        server, and the client gets the server's own answer, as it would without the gateway. Asked for only:
        the default (auto, bare in front of one server) keeps "unknown tool; did you mean" for a mistyped name.
        """
        if self.settings.naming == "bare" and len(self.upstreams) == 1:
            return next(iter(self.upstreams))
        return None

    def _options(self, server: str, caller: Caller) -> CallOptions:
        return CallOptions(
            timeout=self.specs[server].timeout, on_progress=caller.on_progress, relay=caller.relay, lane=caller.lane
        )


def upstream_meta(meta: Any) -> dict[str, Any] | None:
    """The request's `_meta` as the upstream may see it: no progress token (ours), no envelope keys."""
    if not isinstance(meta, dict):
        return None
    kept = {k: v for k, v in meta.items() if k != "progressToken" and not k.startswith(_ENVELOPE_PREFIX)}
    return kept or None


def strip_meta(params: dict[str, Any]) -> None:
    meta = upstream_meta(params.pop("_meta", None))
    if meta:
        params["_meta"] = meta


async def _quietly(awaitable: Awaitable[None]) -> None:
    try:
        with anyio.move_on_after(5):
            await awaitable
    except Exception as exc:  # noqa: BLE001 - a gone client must not disturb the others
        logger.debug("notify failed: %s", exc)
