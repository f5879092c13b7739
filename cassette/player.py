"""Player: one kind of exchange played from a cassette, lane by lane (vcrpy's cassette + mode).

Every kind of exchange (an MCP server's tools, resources and prompts; the
model's completions under the pseudo-server `@model`) is played by this one
object, made of three rules that hold for all of them:

- keying (`cassette.state.StateModel`): what is asked, plus, on a tracked
  server, the lane's history of state-changing calls; model completions are a
  stateless kind (the conversation is the request), so their key is what is asked;
- the lane rule (`cassette.lanes.LaneRule`): which recording answers this lane,
  in what order;
- the divergence rule: a miss on a call that may change state means the lane
  has left the recording, so from then on this kind (server, state group)
  answers nothing more from the cassette in that lane. A stateless kind never
  diverges: each request stands alone.
`play` is the mode switch, one for every kind: it says what to do with one
request, and the key it is recorded or replayed under:
    hit       (replay, hybrid) the recorded entry answers it
    miss      (replay) nothing recorded answers it: an error saying what differs
    diverged  (replay) the lane left the recording earlier: refused
    live      (live, record; hybrid misses, and lanes that went live) the live side
              answers; `records` says whether it is written into the cassette, and
              `took_live` makes a hybrid lane's live answer its recording from then on.
    simulate  (replay with `simulates`) nothing recorded answers it, and a simulator may:
              the lane has not diverged (yet); `took_live` keeps what was simulated,
              `diverge` applies the divergence rule when the simulator gave nothing.
Before any of the last four, a call the recording holds in an equivalent form (the same
call once the tool's schema defaults are filled in: cassette.equivalence) is a hit, marked
`equivalent`, and the lane goes on as the recording did.
The caller owns the rest: the answer's shape, the live side, the counters.
"""

from __future__ import annotations

from typing import Any

import anyio

from mcpgw.cassette.equivalence import Equivalents
from mcpgw.cassette.index import build_index
from mcpgw.cassette.lane_table import MAX_LANES, LaneTable
from mcpgw.cassette.lanes import Cursor, LaneRule
from mcpgw.cassette.misses import diverged_at, dropped_lane_returned
from mcpgw.cassette.state import Call, GroupLane, GroupState, StateModel
from mcpgw.gateway.specs.modes import Mode, PastEnd, choices

HIT, MISS, DIVERGED, LIVE, SIMULATE = "hit", "miss", "diverged", "live", "simulate"


class Lane(Cursor):
    """One replay lane of one kind: its place in the recording, and (in `shared`, common to the
    servers of a state group) its history and where it diverged."""

    __slots__ = ("shared", "calls", "replayed_changes", "live", "_catching_up")

    def __init__(self, shared: GroupLane) -> None:
        super().__init__()
        self.shared = shared
        self.calls = 0  # requests of this kind in this lane
        self.replayed_changes: list[dict[str, Any]] = []  # for hybrid catch-up
        self.live = False  # hybrid: the lane now talks to its own live instance
        self._catching_up: anyio.Lock | None = None

    @property
    def catching_up(self) -> anyio.Lock:
        """Hybrid: held while the lane's live instance is caught up (once, by whichever call goes live first)."""
        if self._catching_up is None:
            self._catching_up = anyio.Lock()
        return self._catching_up

    @property
    def history(self) -> str:
        return self.shared.history

    @history.setter
    def history(self, value: str) -> None:
        self.shared.history = value

    @property
    def diverged(self) -> str | None:
        return self.shared.diverged

    @diverged.setter
    def diverged(self, value: str | None) -> None:
        self.shared.diverged = value


class PlayDecision:
    """What `play` decided for one request; `missed`: the cassette was asked and had no answer
    (a replay miss, or a hybrid miss taken live)."""

    __slots__ = ("lane", "call", "outcome", "entry", "missed", "equivalent")

    def __init__(
        self,
        lane: Lane | None,
        call: Call,
        outcome: str,
        entry: dict[str, Any] | None = None,
        missed: bool = False,
        equivalent: bool = False,
    ) -> None:
        self.lane, self.call, self.outcome, self.entry, self.missed = lane, call, outcome, entry, missed
        self.equivalent = equivalent  # a hit on the recording of an equivalent call (cassette.equivalence)


class Player:
    def __init__(
        self,
        model: StateModel,
        entries: list[dict[str, Any]] | None,
        *,
        mode: str = "replay",
        past_end: str = PastEnd.REPEAT,
        bind_untagged: bool = False,
        legacy_stateful: bool = False,
        group: GroupState | None = None,
        max_lanes: int = MAX_LANES,
        simulates: bool = False,
        equivalents: Equivalents | None = None,
    ) -> None:
        if mode not in choices(Mode):
            raise ValueError(f"mode {mode!r}: expected one of {', '.join(choices(Mode))}")
        self.model = model
        self.mode = mode
        self.replays = mode in ("replay", "hybrid")
        self.records = mode in ("record", "hybrid")
        self.hybrid = mode == "hybrid"
        self.simulates = simulates and mode == "replay"  # a miss goes to the simulator before it is refused
        self.equivalents = equivalents  # None: only exact recordings answer
        entries = entries or []
        self.rule = LaneRule(
            build_index(entries, model, legacy_stateful=legacy_stateful), past_end, bind_untagged=bind_untagged
        )
        self.group = group if group is not None else GroupState(max_lanes)
        # bounded (cassette.lane_table); a forgotten lane frees the recorded lane it followed
        self.lanes: LaneTable[Lane] = LaneTable(max_lanes, on_evict=lambda _name, lane: self.rule.release(lane))

    def bound(self, name: str) -> bool:
        """Whether replay lane `name` follows a recorded lane already."""
        lane = self.lanes.get(name)
        return lane is not None and lane.follows is not None

    def play(self, name: str, method: str, params: dict[str, Any] | None) -> PlayDecision:
        if not self.replays:  # live, record: keyed in request order, as replay will key it
            return PlayDecision(None, self.group.take_call(self.model, method, params, name), LIVE)
        lanes = self.lanes
        lane = lanes.get(name)
        if lane is None:
            lane = lanes.use(name, lambda: self._new_lane(name))
        else:  # LaneTable.use's way for a known lane, without a closure made per request
            lanes.move_to_end(name)
        lane.calls += 1
        call = self.model.keyed(method, params, lane.shared.history)
        if lane.live:
            return PlayDecision(lane, call, LIVE)
        if lane.shared.diverged is not None:
            return PlayDecision(lane, call, DIVERGED)
        entry = self.rule.take(lane, name, call.key)
        equivalent = False
        if entry is None and self.equivalents is not None:  # only a miss pays for this
            recorded_key = self.equivalents.find(self.rule.by_key, method, params, lane.shared.history)
            if recorded_key is not None:
                entry = self.rule.take(lane, name, recorded_key)
                if entry is not None:  # the lane goes on as the recording did: its history takes the recorded call
                    call = Call(entry.get("base", call.base), call.history, recorded_key, call.changes_state)
                    equivalent = True
        if entry is None:
            if self.hybrid:
                return PlayDecision(lane, call, LIVE, missed=True)
            if self.simulates:
                return PlayDecision(lane, call, SIMULATE, missed=True)
            self.diverge(lane, call, method, params)
            return PlayDecision(lane, call, MISS, missed=True)
        if call.changes_state:
            lane.shared.history = call.history_after()
            lane.replayed_changes.append(entry)
        return PlayDecision(lane, call, HIT, entry, equivalent=equivalent)

    def diverge(self, lane: Lane, call: Call, method: str, params: dict[str, Any] | None) -> None:
        """The divergence rule: a miss on a call that may change state means the lane left the recording."""
        if call.changes_state:
            lane.diverged = diverged_at(lane.calls, self.model.server, method, params)

    def _new_lane(self, name: str) -> Lane:
        lane = Lane(self.group.lane(name))
        if self.lanes.forgotten(name) and lane.diverged is None:  # its place in the recording was dropped for room
            lane.diverged = dropped_lane_returned(name, self.lanes.max_lanes, history=False)
        return lane

    def took_live(self, turn: PlayDecision, name: str, entry: dict[str, Any]) -> None:
        """Hybrid: what the live side just answered is the lane's recording from now on."""
        if turn.lane is None:  # not replaying: nothing to follow
            return
        self.rule.add(turn.lane, name, turn.call.key, entry)
        if self.equivalents is not None:
            self.equivalents.add(turn.call.key, entry)
        if turn.call.changes_state:
            turn.lane.history = turn.call.history_after()
            turn.lane.replayed_changes.append(entry)  # a later catch-up (its instance stopped idle) re-sends it too

    def instance_stopped(self, name: str) -> None:
        """Hybrid: the lane's live instance stopped (idle), its state gone: its next miss catches a fresh one up
        again, on every state-changing call it replayed or took live."""
        lane = self.lanes.get(name)
        if lane is not None:
            lane.live = False

    def lane_report(self) -> dict[str, dict[str, Any]]:
        """Per lane: calls, whether it diverged (and where), whether it went live."""
        return {
            name: {"calls": lane.calls, "diverged": lane.diverged, "live": lane.live}
            for name, lane in self.lanes.items()
        }
