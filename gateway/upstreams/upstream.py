"""The one interface everything plugs into: an upstream answers MCP requests for ONE server.

It works on wire dicts (method + params dict -> a `Reply` holding the result dict) so a cassette
stores exactly what went over the wire and drift compares dicts. Live
(`gateway.upstreams.live`), one instance per run (`gateway.upstreams.isolation`), recording
(`cassette.recording_upstream`), cassette (`replay.cassette_upstream`) and the
handler-based test double below all implement `Upstream`, as httpx's
transports implement `BaseTransport`: the router and the composition root use
nothing of an upstream that the Protocol does not name. A capability only some
upstreams have is a small protocol of its own (`PerRunInstances`,
`ReplayCounters`, `AnswersAtOnce`), asked for with `isinstance`, never by probing attributes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import anyio
from anyio.abc import TaskStatus

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.tools.catalog import ServerCatalog

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
RelayFn = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(slots=True, eq=False)
class CallOptions:
    """Per-request options, all inputs; every wait is bounded by `timeout` (silence) and `max_timeout` (total). One
    object per call, equal only to itself: two calls of one run start with equal fields, and a table of calls in
    flight (gateway.upstreams.live) that removed by equality removed the other call's entry."""

    timeout: float | None = None
    max_timeout: float | None = None
    on_progress: ProgressFn | None = None  # progress from the upstream, for the client
    relay: RelayFn | None = None  # requests the upstream sends back (sampling, elicitation, roots)
    lane: str = ""  # run/session the request belongs to: replay order and stateful history are per lane


LIVE = "live"  # a reply's source when a server answered it (replay.answer_sources names the others)


@dataclass(slots=True)
class Reply:
    """What an upstream answers: the result, and where it came from, for the call's record.

    An error has the same facts: an upstream that knows them (a cassette, a recording) sets them on the
    `GatewayError` it raises (`answered_by`); an error without them came from the live server."""

    result: dict[str, Any]
    source: str = LIVE  # live, recorded, equivalent, simulated, ... (replay.answer_sources)
    cassette_key: str | None = None  # the key it was recorded or replayed under
    result_digest: str | None = None  # its digest (gateway.encoding.result_digest), when the upstream knew it already
    note: dict[str, Any] | None = None  # a simulated answer's making (replay.answer_sources), for its call record


def answered_by(exc: GatewayError, source: str, cassette_key: str | None) -> GatewayError:
    """`exc`, saying where the failed answer came from (see `Reply`)."""
    exc.answer_source, exc.cassette_key = source, cassette_key
    return exc


class Upstream(Protocol):
    """One server, as the router sees it: supervised in its own task, with a status and a catalog."""

    name: str  # the server's id in the lock

    @property
    def status(self) -> Status: ...  # what `mcpgw servers` and /status show

    @property
    def catalog(self) -> ServerCatalog | None: ...  # None until the server has answered its lists (or never)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled or closed; `task_status.started()` once supervision has begun (not once ready)."""

    async def wait_ready(self, timeout: float) -> None:
        """Return once the first start has ended, ready or not; bounded by `timeout`."""

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> Reply:
        """One request on the wire: its reply, or a `GatewayError`."""

    async def aclose(self) -> None: ...


@runtime_checkable
class PerRunInstances(Protocol):
    """An upstream that starts a fresh instance per lane (`isolation: run`)."""

    # Told the lane whose instance it stopped for being idle (its state is gone): what keys that lane's calls on
    # the state the instance had must start over (given at construction by the composition root; None: nobody).
    on_idle_stop: Callable[[str], None] | None

    @property
    def run_instances(self) -> int: ...  # instances serving lanes now

    async def discard(self, lane: str) -> None:
        """Stop the lane's instance: its next request starts from nothing."""


@runtime_checkable
class AnswersAtOnce(Protocol):
    """An upstream whose `request` may answer without waiting for anything (a replay with no live fallback:
    the cassette answers from memory and LMDB). When every upstream does, the hot lane answers a call in the
    event loop's turn that read it, instead of in a task (gateway.runtime.eager)."""

    @property
    def answers_at_once(self) -> bool: ...  # True: `request` never suspends, nor uses anything bound to a task


@runtime_checkable
class ReplayCounters(Protocol):
    """An upstream that answers from a recording: per tool (or method) how often it hit, missed or refused."""

    hits: Counter[str]
    misses: Counter[str]
    diverged: Counter[str]

    def lane_report(self) -> dict[str, dict[str, Any]]: ...  # per lane: calls, divergence, whether it went live


STATES = ("starting", "ready", "restarting", "unavailable", "stopped")


@dataclass
class Status:
    """What a person sees for one upstream in `mcpgw servers` and `/status`."""

    state: str = "starting"
    reason: str | None = None
    since: float = field(default_factory=time.time)
    restarts: int = 0
    pid: int | None = None
    server_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    tools: int = 0
    start_seconds: float | None = None  # from the first start until first ready
    missing_keys: list[str] = field(default_factory=list)  # declared keys it was started without

    def set(self, state: str, reason: str | None = None) -> None:
        self.state, self.reason, self.since = state, reason, time.time()

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "since": self.since,
            "restarts": self.restarts,
            "pid": self.pid,
            "server_info": self.server_info,
            "protocol_version": self.protocol_version,
            "tools": self.tools,
            "start_seconds": self.start_seconds,
            "missing_keys": self.missing_keys,
        }


Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class HandlerUpstream:
    """A test double: answers every request with an async handler (like httpx's MockTransport)."""

    def __init__(self, name: str, handler: Handler, catalog: ServerCatalog | None = None) -> None:
        self.name = name
        self._handler = handler
        self.catalog = catalog
        self.status = Status("ready")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def wait_ready(self, timeout: float) -> None:
        return None

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> Reply:
        return Reply(await self._handler(method, params))

    async def aclose(self) -> None:
        self.status.set("stopped")
