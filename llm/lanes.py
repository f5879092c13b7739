"""Which recorded model answer a replayed request gets: lanes follow recorded lanes.

Identical chat requests can have had different answers (a sampled model, a 500
then a success on retry, a failed attempt of a task before its rerun). A replay
lane therefore answers from one recorded lane, in that lane's order:

- a lane that was recorded under the same name (a run id: `?run=` / `X-Run-Id`)
  replays that lane;
- any other lane (an untagged client: its identity is new in every gateway
  process) is bound, on its first request, to the first recorded lane holding that
  request which no other replay lane holds yet; so two untagged clients that sent
  the same conversation each replay one whole recorded conversation, never a mix,
  whatever order or overlap they arrive in;
- a request its bound lane never made is answered from every lane's recordings
  of it, in recorded order, so a conversation recorded in another lane still
  replays.
Past the end of what was recorded, `past_end` decides: "repeat" the last answer, or "miss".
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from recorder.lane_table import MAX_LANES, LaneTable


class _LaneState:
    __slots__ = ("follows", "positions")

    def __init__(self) -> None:
        self.follows: str | None = None  # the recorded lane this replay lane follows, once bound
        self.positions: Counter[str] = Counter()  # key -> answers taken


class ReplayLanes:
    def __init__(self, entries: list[dict[str, Any]] | None, past_end: str = "repeat",
                 max_lanes: int = MAX_LANES) -> None:
        self.past_end = past_end
        self.by_key: dict[str, list[dict[str, Any]]] = {}
        self.by_lane: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (key, recorded lane) -> entries
        self.recorded_lanes: set[str] = set()
        # replay lane -> what it follows and how far; bounded, and a forgotten lane frees what it followed
        self.lanes: LaneTable[_LaneState] = LaneTable(max_lanes, on_evict=self._release)
        self.claimed: set[str] = set()  # recorded lanes some replay lane follows
        for entry in entries or ():
            self._index(entry)

    def _index(self, entry: dict[str, Any]) -> None:
        lane = str(entry.get("lane") or "")
        self.by_key.setdefault(entry["key"], []).append(entry)
        self.by_lane.setdefault((entry["key"], lane), []).append(entry)
        self.recorded_lanes.add(lane)

    def take(self, lane: str, key: str) -> dict[str, Any] | None:
        everyone = self.by_key.get(key)
        if not everyone:
            return None
        state = self.lanes.use(lane, _LaneState)
        follows = state.follows or self._bind(lane, state, everyone)
        entries = self.by_lane.get((key, follows)) or everyone
        index = state.positions[key]
        state.positions[key] += 1
        if index < len(entries):
            return entries[index]
        return entries[-1] if self.past_end == "repeat" else None

    def _release(self, _lane: str, state: _LaneState) -> None:
        if state.follows:
            self.claimed.discard(state.follows)

    def _bind(self, lane: str, state: _LaneState, everyone: list[dict[str, Any]]) -> str:
        if lane in self.recorded_lanes:
            chosen = lane
        else:
            free = [e["lane"] for e in everyone if e.get("lane") not in self.claimed and e.get("lane") is not None]
            if not free:
                return ""  # every recorded lane is taken: answer from all of them, in order
            chosen = free[0]
        state.follows = chosen
        self.claimed.add(chosen)
        return chosen

    def add(self, entry: dict[str, Any]) -> None:
        """A hybrid miss just recorded live: from now on its lane follows its own recording."""
        self._index(entry)
        lane = entry["lane"]
        state = self.lanes.use(lane, _LaneState)
        state.follows = lane
        self.claimed.add(lane)
        state.positions[entry["key"]] = len(self.by_lane[(entry["key"], lane)])
