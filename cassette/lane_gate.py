"""The order in which one lane's calls reach a server with state while recording: the order they were keyed in.

A call's key holds the lane's history of state-changing calls as it stood when the call arrived
(cassette.state.GroupState.take_call), so the recording is right only if the server also meets the calls in
that order. Calls sent at once (a planning round) need not be: a read sent after a write could be answered
from the state before it, and that answer stored under the key of the state after it, a wrong answer for
every replay. So while recording, a lane's state-changing call waits for every earlier call of the lane to that
state to finish, and any call waits for the earlier state-changing ones; reads among themselves still overlap.
Stateless servers have no history and no gate.
"""

from __future__ import annotations

import anyio


class Ticket:
    """One call's place in its lane: the earlier calls it must follow."""

    __slots__ = ("changes_state", "earlier", "done", "_gate", "_lane")

    def __init__(self, gate: LaneGates, lane: str, changes_state: bool, earlier: list[Ticket]) -> None:
        self.changes_state = changes_state
        self.earlier = earlier
        self.done = anyio.Event()
        self._gate = gate
        self._lane = lane

    async def turn(self) -> None:
        """Return once the earlier calls this one must follow have finished."""
        for other in self.earlier:
            await other.done.wait()
        self.earlier = []

    def leave(self) -> None:
        """The call has finished (answered, failed or cancelled, waiting or not): the later ones may go."""
        self.done.set()
        self._gate.forget(self._lane, self)


class LaneGates:
    """Per lane, its calls in flight in arrival order; a lane with none holds nothing."""

    def __init__(self) -> None:
        self._in_flight: dict[str, list[Ticket]] = {}

    def ticket(self, lane: str, changes_state: bool) -> Ticket:
        """Taken when the call is keyed, in the same step: arrival order is key order."""
        flying = self._in_flight.setdefault(lane, [])
        earlier = [t for t in flying if changes_state or t.changes_state]
        ticket = Ticket(self, lane, changes_state, earlier)
        flying.append(ticket)
        return ticket

    def forget(self, lane: str, ticket: Ticket) -> None:
        flying = self._in_flight.get(lane)
        if flying is not None and ticket in flying:
            flying.remove(ticket)
            if not flying:
                del self._in_flight[lane]

    def in_flight(self, lane: str) -> int:
        return len(self._in_flight.get(lane, ()))
