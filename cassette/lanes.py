"""Which recording answers a replay lane, in what order: one rule for every kind of exchange.

A cassette can hold the same request several times with different answers (a
sampled model, a 500 then a success on retry, a failed attempt of a task before
its rerun, a read at one state and again at another). A replay lane (a run id,
else one client) therefore answers from one recorded lane, in that lane's order:

- it follows the recorded lane of its own name (a tagged run id replays itself);
- a lane whose name was never recorded (an untagged client: its identity is new
  in every gateway process) follows, where the kind of exchange asks for it
  (`bind_untagged`: model completions), the first recorded lane holding its
  first request that the fewest replay lanes follow (none, at first); so two
  untagged clients that sent the same conversation each replay one whole
  recorded conversation, never a mix, and so do the clients of a second
  evaluation against the same gateway (the first one's clients, gone, still
  count as following theirs: nothing says a client has left). Where it does not (MCP servers, whose keys hold the lane's
  history) it answers from every lane's recordings, in recorded order;
- a request its followed lane never made is answered from every lane's
  recordings of it, in recorded order.
Identical requests advance one position each; past the end of what was
recorded, `past_end` decides: "repeat" the last answer, or "miss".
"""

from __future__ import annotations

from collections import Counter
from typing import Any

PAST_END = ("repeat", "miss")


class Cursor:
    """A replay lane's place in the recording (kinds add their own slots: cassette.player.Lane)."""

    __slots__ = ("follows", "positions")

    def __init__(self) -> None:
        self.follows: str | None = None  # the recorded lane this replay lane follows, once bound
        self.positions: Counter[str] = Counter()  # key -> answers taken


class LaneRule:
    def __init__(
        self, index: dict[str, list[dict[str, Any]]], past_end: str = "repeat", *, bind_untagged: bool = False
    ) -> None:
        self.past_end = past_end
        self.bind_untagged = bind_untagged
        self.by_key: dict[str, list[dict[str, Any]]] = {}  # key -> entries, in recorded order
        self.by_lane: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (key, recorded lane) -> entries
        self.recorded_lanes: set[str] = set()
        self.claims: Counter[str] = Counter()  # recorded lane -> how many replay lanes follow it
        for key, entries in index.items():
            for entry in entries:
                self._index(key, entry)

    def _index(self, key: str, entry: dict[str, Any]) -> None:
        lane = str(entry.get("lane") or "")
        self.by_key.setdefault(key, []).append(entry)
        self.by_lane.setdefault((key, lane), []).append(entry)
        self.recorded_lanes.add(lane)

    def take(self, cursor: Cursor, lane: str, key: str) -> dict[str, Any] | None:
        follows = cursor.follows
        entries = self.by_lane.get((key, follows)) if follows else None  # the usual case: one lookup
        if entries is None:
            everyone = self.by_key.get(key)
            if not everyone:
                return None
            if not follows:
                entries = self.by_lane.get((key, self._bind(lane, cursor, everyone)))
            entries = entries or everyone
        positions = cursor.positions
        index = positions.get(key, 0)  # not `positions[key]`: a Counter's missing key costs a Python call, twice
        positions[key] = index + 1
        if index < len(entries):
            return entries[index]
        return entries[-1] if self.past_end == "repeat" else None

    def _bind(self, lane: str, cursor: Cursor, everyone: list[dict[str, Any]]) -> str:
        if not self.bind_untagged:  # its own name; nobody else would take it, so nothing to claim
            cursor.follows = lane
            return lane
        if lane in self.recorded_lanes:
            chosen = lane
        else:
            holding = [e["lane"] for e in everyone if e.get("lane") is not None]
            if not holding:
                return ""  # recorded by no lane (older cassettes): answer from all of them, in order
            fewest = min(self.claims[name] for name in holding)
            chosen = next(name for name in holding if self.claims[name] == fewest)
        cursor.follows = chosen
        self.claims[chosen] += 1
        return chosen

    def release(self, cursor: Cursor) -> None:
        """A forgotten replay lane frees the recorded lane it followed."""
        if cursor.follows and self.claims[cursor.follows] > 0:
            self.claims[cursor.follows] -= 1

    def add(self, cursor: Cursor, lane: str, key: str, entry: dict[str, Any]) -> None:
        """A hybrid miss just taken live: from now on its lane follows its own recording, and asking
        the same again replays what was just taken (past its end: as `past_end` says)."""
        self._index(key, entry)
        if cursor.follows != lane:
            self.release(cursor)
            self.claims[lane] += 1
        cursor.follows = lane
        cursor.positions[key] = len(self.by_lane[(key, lane)])
