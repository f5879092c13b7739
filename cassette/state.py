"""Which calls change a server's state, and the per-lane history keys depend on.

A server declared `stateless` keys every call on what is asked alone. Every
other server is tracked: a call's key also holds the history of the
state-changing calls made to that server earlier in the same lane (run), so
the same question asked at another state is a different request. Statefulness
is decided without flags where the server tells: a `tools/call` changes state
unless the tool declares `readOnlyHint: true`; reading resources, getting
prompts, completions and lists never do. Record and replay use this one
model, so they compute the same keys; so do the model's chat completions, a
stateless kind under the pseudo-server `@model` (llm.passthrough.MODEL). Servers that share state outside MCP
(say a filesystem server and a git server on one directory) declare one
`state_group`: their calls then share one history per lane, so a read of one
is keyed on what the other changed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from mcpgw.cassette.keys import base_key, chain, with_history
from mcpgw.cassette.lane_gate import LaneGates
from mcpgw.cassette.lane_table import MAX_LANES, LaneTable
from mcpgw.cassette.misses import dropped_lane_returned

# Requests that only read: they never move a server's state forward.
READS = frozenset(
    {
        "resources/read",
        "prompts/get",
        "completion/complete",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "tools/list",
        "ping",
    }
)


def read_only_tools(tools: list[dict[str, Any]] | None) -> frozenset[str]:
    """Tools that declare they change nothing (MCP `readOnlyHint`)."""
    return frozenset(
        t["name"]
        for t in tools or ()
        if isinstance(t, dict) and (t.get("annotations") or {}).get("readOnlyHint") is True
    )


@dataclass(frozen=True)
class StateModel:
    server: str
    tracked: bool  # False for servers declared stateless
    read_only: frozenset[str] = frozenset()

    def changes_state(self, method: str, params: dict[str, Any] | None) -> bool:
        """The statefulness rule, the one copy of it: recording's keys, replay's index and its gates all ask it."""
        if not self.tracked or method in READS:
            return False
        if method == "tools/call":
            return (params or {}).get("name") not in self.read_only
        return True  # anything else (subscriptions aside, which never reach a cassette): assume it may

    def keyed(self, method: str, params: dict[str, Any] | None, history: str) -> Call:
        base = base_key(self.server, method, params)
        if not self.tracked:
            return Call(base, "", base, False)
        return Call(base, history, with_history(base, history), self.changes_state(method, params))


class Call(NamedTuple):
    """One request as the cassette sees it. (A named tuple: a frozen dataclass sets each field through
    object.__setattr__, 1 us a call.)"""

    base: str  # what is asked
    history: str  # the lane's history when it was asked
    key: str  # base + history
    changes_state: bool

    def history_after(self) -> str:
        return chain(self.history, self.base) if self.changes_state else self.history


@dataclass
class GroupLane:
    """One lane's state in a state group: shared by the group's servers."""

    history: str = ""
    diverged: str | None = None  # where the lane left the recording (replay)


class GroupState(LaneTable[GroupLane]):
    """lane -> GroupLane, for the servers of one state group (or one server alone); bounded (lane_table).
    `gates`: while recording, the order its lanes' calls reach the group's servers in (cassette.lane_gate)."""

    def __init__(self, max_lanes: int = MAX_LANES) -> None:
        super().__init__(max_lanes)
        self.gates = LaneGates()

    def lane(self, name: str) -> GroupLane:
        return self.use(name, lambda: self._new_lane(name))

    def _new_lane(self, name: str) -> GroupLane:
        if not self.forgotten(name):
            return GroupLane()
        # Dropped for room while idle, and back: its history is gone, the server's state is not. Keys no recording
        # holds (so what it records is never replayed as another state's), and replay refuses it (diverged).
        return GroupLane(
            history=f"forgotten:{uuid.uuid4().hex}", diverged=dropped_lane_returned(name, self.max_lanes, history=True)
        )

    def forget(self, lane: str) -> None:
        """The lane's server state is gone (its per-run instance stopped): its next call is keyed as a fresh
        run's, as the fresh instance that answers it is one."""
        self.pop(lane, None)

    def take_call(self, model: StateModel, method: str, params: dict[str, Any] | None, lane: str) -> Call:
        """A request's key as recording computes it: the lane's history advances now, in request
        order (as replay does), so overlapping calls record the keys replay will compute."""
        if not model.tracked:  # a stateless kind has no history to hold
            return model.keyed(method, params, "")
        state = self.lane(lane)
        call = model.keyed(method, params, state.history)
        if call.changes_state:
            state.history = call.history_after()
        return call
