"""CassetteUpstream: answers one server's requests from a cassette, starting nothing.

The server is one kind of exchange played by `cassette.player.Player` (the model's
completions are another), so keys, lanes and divergence are the player's:
- a request's key holds the lane's history of state-changing calls to this
  server (`cassette.state`), so a read is answered only at the state it was
  recorded in; identical requests at one state answer in recorded order, and
  past the end `past_end` decides ("repeat" the last answer, or "miss"); a lane
  recorded under the same name (a tagged run id, e.g. one attempt of a task)
  answers from its own recordings of the request, any other lane from all of
  them (`cassette.lanes`);
- a miss on a state-changing call means the run has left the recording: from
  then on this server (and its state group) answers nothing more from the cassette in that lane
  (`ReplayDiverged`, "diverged at call N: ..."), unless it is declared stateless.
What is this server's own: MCP errors, progress, and in hybrid mode (`fallback`:
a RecordingUpstream over the live server) the live side of a miss. On a tracked
server the lane first gets a fresh instance, which is sent the lane's replayed
state-changing calls in order, each answer checked against the recording
(catch-up); the lane then stays live on that server. If catch-up cannot
reproduce the recording, the call fails with why.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import anyio
from anyio.abc import TaskStatus

from mcpgw.cassette.codec import pack
from mcpgw.cassette.equivalence import Equivalents
from mcpgw.cassette.lane_table import MAX_LANES
from mcpgw.cassette.misses import catch_up_diverged, catch_up_failed, refused, tool_miss, what
from mcpgw.cassette.player import DIVERGED, LIVE, MISS, SIMULATE, Lane, PlayDecision, Player
from mcpgw.cassette.recorder import entry_record
from mcpgw.cassette.redaction import MASK
from mcpgw.cassette.state import Call, GroupState, StateModel, read_only_tools
from mcpgw.gateway.encoding.result_memo import ResultMemo
from mcpgw.gateway.errors.tree import GatewayError, ReplayDiverged, ReplayMiss, UpstreamRejected
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import CallOptions, PerRunInstances, Reply, Status, Upstream, answered_by
from mcpgw.replay.answer_sources import (
    ANSWERED_AS,
    EQUIVALENT,
    MISSED,
    RECORDED,
    SIMULATED,
    Simulation,
    label_all,
    with_label,
)
from mcpgw.replay.answer_sources import LIVE as LIVE_SOURCE
from mcpgw.replay.compare import Rules, compare_results, parse_rules


class LiveFallback(Upstream, Protocol):
    """Hybrid mode's live side of a miss: an upstream that records what it answers (a RecordingUpstream)."""

    inner: Upstream  # the live server itself: calls made through it (a catch-up) are not recorded

    async def request_keyed(self, call: Call, method: str, params: dict[str, Any], options: CallOptions) -> Reply:
        """The request answered live and recorded under `call`, as the replaying side keyed (and ordered) it."""


class CassetteUpstream:
    """An `Upstream`, `ReplayCounters` and `AnswersAtOnce`: one server's recording, lane by lane."""

    def __init__(
        self,
        name: str,
        recorded_catalog: dict[str, Any] | None,
        server_entries: list[dict[str, Any]],
        *,
        tracked: bool = True,
        legacy_stateful: bool = False,
        past_end: str = "repeat",
        fallback: LiveFallback | None = None,
        ignore: Any = (),
        group: GroupState | None = None,
        max_lanes: int = MAX_LANES,
        equivalents: bool = True,
        simulation: Simulation | None = None,
        label_in_result: bool = False,
    ) -> None:
        self.name = name
        self.server_entries = server_entries
        self.past_end = past_end
        self.fallback = fallback
        self.recorded_catalog = ServerCatalog.from_dict(recorded_catalog["catalog"]) if recorded_catalog else None
        self.model = StateModel(
            name, tracked, read_only_tools(self.recorded_catalog.tools if self.recorded_catalog else None)
        )
        label_all(server_entries)
        self.simulation = simulation  # --on-miss simulate, for a server that may be simulated
        self.label_in_result = label_in_result
        self.player = Player(
            self.model,
            server_entries,
            mode="hybrid" if fallback is not None else "replay",
            past_end=past_end,
            legacy_stateful=legacy_stateful,
            group=group,
            max_lanes=max_lanes,
            simulates=simulation is not None,
            equivalents=Equivalents(name, self._input_schema) if equivalents else None,
        )
        self._ignore = parse_rules(list(ignore or ()), f"server {name!r} ignore")
        self.replay_status = Status("ready" if self.recorded_catalog else "unavailable")
        if self.recorded_catalog is not None:
            self.replay_status.server_info = self.recorded_catalog.init.get("serverInfo")
            self.replay_status.protocol_version = self.recorded_catalog.init.get("protocolVersion")
            self.replay_status.tools = len(self.recorded_catalog.tools)
            self.replay_status.reason = "replaying from cassette"
        else:
            self.replay_status.reason = "not in the cassette"
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()
        self.diverged: Counter[str] = Counter()
        self._stable = ResultMemo()  # the recorded results answered: their digests (and answer texts) made once

    # A server the cassette lacks is, in hybrid mode, the live one: its catalog and state (each of its calls
    # misses and goes live, recorded), rather than "unavailable" while its live side runs (and "Unknown tool").
    @property
    def catalog(self) -> ServerCatalog | None:
        if self.recorded_catalog is None and self.fallback is not None:
            return self.fallback.catalog
        return self.recorded_catalog

    def _tool(self, name: str) -> dict[str, Any] | None:
        catalog = self.recorded_catalog
        if catalog is None:
            return None
        return next((t for t in catalog.tools if isinstance(t, dict) and t.get("name") == name), None)

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._tool(name)
        schema = tool.get("inputSchema") if tool else None
        return schema if isinstance(schema, dict) else None

    @property
    def answers_at_once(self) -> bool:
        # A hit, a miss and a divergence are all answered from memory and LMDB; a live or simulated miss waits.
        return self.fallback is None and self.simulation is None

    @property
    def status(self) -> Status:
        if self.recorded_catalog is None and self.fallback is not None:
            return self.fallback.status
        return self.replay_status

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        if self.fallback is not None:  # hybrid: the live server is supervised as usual
            await self.fallback.run(task_status=task_status)
        else:
            task_status.started()

    async def wait_ready(self, timeout: float) -> None:
        if self.fallback is not None:
            await self.fallback.wait_ready(timeout)

    async def aclose(self) -> None:
        if self.fallback is not None:
            await self.fallback.aclose()

    def instance_stopped(self, lane: str) -> None:
        """Hybrid: the live instance of `lane` stopped for being idle (gateway.upstreams.isolation); see Player.instance_stopped."""
        self.player.instance_stopped(lane)

    def lane_report(self) -> dict[str, dict[str, Any]]:
        """Per lane: calls, whether it diverged (and where), whether it went live."""
        return self.player.lane_report()

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> Reply:
        options = options or CallOptions()
        if self.fallback is None or not self.model.tracked:
            return await self._answer(method, params, options)
        # Hybrid: a lane's calls reach the live side in the order they came, as recording's do (cassette.lane_gate):
        # a read sent while the lane's write runs live would be answered from the state before it and recorded
        # under the key after it. Each call is keyed once the earlier ones it must follow have finished, so a
        # write answered live has moved the lane's history on before a later call is keyed.
        ticket = self.player.group.gates.ticket(options.lane, self.model.changes_state(method, params))
        try:
            await ticket.turn()
            return await self._answer(method, params, options)
        finally:
            ticket.leave()

    async def _answer(self, method: str, params: dict[str, Any], options: CallOptions) -> Reply:
        turn = self.player.play(options.lane, method, params)
        lane, call = turn.lane, turn.call
        assert lane is not None  # this player replays
        label = params.get("name") or method
        if turn.outcome == LIVE:
            if turn.missed:
                self.misses[label] += 1
            return await self._live(turn, method, params, options)
        if turn.outcome == SIMULATE:
            self.misses[label] += 1
            return await self._simulate(turn, method, params, options)
        if turn.outcome == DIVERGED:
            self.diverged[label] += 1
            raise answered_by(
                ReplayDiverged(
                    refused(lane.diverged, self.name, method, params, lane.calls),
                    data={"server": self.name, "method": method, "key": call.key, "diverged": lane.diverged},
                ),
                MISSED,
                call.key,
            )
        if turn.outcome == MISS:
            self.misses[label] += 1
            text = tool_miss(
                self.name,
                method,
                params,
                self.server_entries,
                self.model.tracked and bool(lane.history),
                changes_state=call.changes_state,
            )
            raise answered_by(
                ReplayMiss(text, data={"server": self.name, "method": method, "key": call.key}), MISSED, call.key
            )
        entry = turn.entry  # a hit
        assert entry is not None
        self.hits[label] += 1
        if options.on_progress is not None:
            for progress, total, message in entry.get("progress") or ():
                await options.on_progress(progress, total, message)
        # (an entry's label, when it has one other than `recorded`, was set as it was loaded or taken: label_all)
        source = EQUIVALENT if turn.equivalent else entry.get(ANSWERED_AS) or RECORDED
        if "error" in entry:  # the server's recorded error, answered again
            error = entry["error"]
            raise answered_by(
                UpstreamRejected(self.name, error.get("code", -32603), error.get("message", ""), error.get("data")),
                source,
                call.key,
            )
        result: dict[str, Any] = entry["result"]
        # played again, a simulated answer says which simulator made it, shown which recordings
        note = entry.get("simulator") if source == SIMULATED else None
        return Reply(
            with_label(result, source) if self.label_in_result else result,
            source,
            call.key,
            self._stable.mark(result).digest,
            note,
        )

    async def _simulate(self, turn: PlayDecision, method: str, params: dict[str, Any], options: CallOptions) -> Reply:
        """--on-miss simulate: the simulator's answer, kept in the overlay; a miss (and the divergence rule) without one."""
        assert self.simulation is not None and turn.lane is not None
        tool = self._tool(str(params.get("name"))) if method == "tools/call" else None
        try:
            if tool is None:
                raise ReplayMiss(
                    tool_miss(
                        self.name,
                        method,
                        params,
                        self.server_entries,
                        self.model.tracked and bool(turn.lane.history),
                        simulate_only=True,
                    ),
                    data={"server": self.name, "method": method, "key": turn.call.key},
                )
            result, entry, note = await self.simulation.answer(
                self.name, tool, turn.call, method, params, self.server_entries, options
            )
        except ReplayMiss as exc:
            self.player.diverge(turn.lane, turn.call, method, params)
            raise answered_by(exc, MISSED, turn.call.key)
        self.player.took_live(turn, options.lane, entry)  # asked again, it replays what was simulated
        return Reply(
            with_label(result, SIMULATED) if self.label_in_result else result,
            SIMULATED,
            turn.call.key,
            self._stable.mark(result).digest,
            note,
        )

    # -- hybrid --------------------------------------------------------------------

    async def _live(self, turn: PlayDecision, method: str, params: dict[str, Any], options: CallOptions) -> Reply:
        lane, call = turn.lane, turn.call
        assert lane is not None and self.fallback is not None  # hybrid: a lane, and the live side
        if self.model.tracked and not lane.live:
            try:
                async with lane.catching_up:  # reads of the lane overlap: one of them catches the instance up
                    if not lane.live:
                        await self._catch_up(lane, options)
                        lane.live = True
            except GatewayError as exc:  # the live side could not be brought to the recording's state: refused
                raise answered_by(exc, MISSED, call.key)
        try:  # recorded under the key replay computes, history included
            result = (await self.fallback.request_keyed(call, method, params, options)).result
        except GatewayError as exc:  # whatever the live side answers, errors included
            raise answered_by(exc, LIVE_SOURCE, call.key)
        # As a recorded entry is (but unredacted, and kept in memory only), for what replays it: a later catch-up
        # re-sends it (its method and params).
        entry = entry_record(call, self.name, method, params, {"result": result}, lane=options.lane)
        entry[ANSWERED_AS] = LIVE_SOURCE
        self.player.took_live(turn, options.lane, entry)  # what this lane asks again replays what it just took live
        return Reply(with_label(result, LIVE_SOURCE) if self.label_in_result else result, LIVE_SOURCE, call.key)

    async def _catch_up(self, lane: Lane, options: CallOptions) -> None:
        """Bring a fresh live instance to the state the lane reached in the recording."""
        assert self.fallback is not None  # called in hybrid mode only
        live = self.fallback.inner  # the RecordingUpstream's live side: catch-up calls are not recorded again
        if isinstance(live, PerRunInstances):
            await live.discard(options.lane)  # whatever it held, it starts from nothing
        for number, entry in enumerate(lane.replayed_changes, 1):
            what_call = what(entry["method"], entry.get("params") or {})
            problem = await self._replay_live(live, entry, options)
            if problem is not None:
                lane.diverged = catch_up_diverged(number, what_call)
                if isinstance(live, PerRunInstances):
                    await live.discard(options.lane)
                raise ReplayDiverged(
                    catch_up_failed(self.name, len(lane.replayed_changes), number, what_call, problem),
                    data={"server": self.name, "diverged": lane.diverged},
                )

    async def _replay_live(self, live: Any, entry: dict[str, Any], options: CallOptions) -> str | None:
        params = entry.get("params") or {}
        if MASK.encode() in pack(params):
            return "has redacted arguments in the cassette, so it cannot be re-sent"
        quiet = CallOptions(timeout=options.timeout, max_timeout=options.max_timeout, lane=options.lane)
        try:
            result = (await live.request(entry["method"], params, quiet)).result
        except UpstreamRejected as exc:
            if "error" in entry and entry["error"].get("code") == exc.code:
                return None
            return f"was answered live with error {exc.code}: {exc.message}"
        except GatewayError as exc:
            return f"failed live: {exc.message}"
        if "error" in entry:
            return "succeeded live but was an error in the recording"
        rules = Rules.for_tool(self._ignore, params.get("name") or entry["method"])
        _, differences = compare_results(entry["result"], result, rules)
        if differences:
            return "answered differently live: " + "; ".join(d.describe() for d in differences[:3])
        return None
