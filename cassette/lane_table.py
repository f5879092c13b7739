"""Per-lane state, bounded: at most `max_lanes` lanes, the least recently used forgotten first.

A lane is a run id (X-Run-Id) or a client without one; each costs about 1.5 KB in replay
(its position in the recording, its history, what it follows), and run ids are the
clients' to choose: 10,000 of them held 13.6 MB for good. As with HTTP sessions
(gateway/sessions/sessions.py), the table has a cap and makes room by dropping the lane used
least recently; a lane in use is the most recent one, so only a lane that has been
idle while `max_lanes` others were used is dropped. A dropped lane that comes back is not
a new run, though: its history is gone while the server's state (and the recording) went on.
So the names of dropped lanes are kept, all of them, outside memory (cassette.dropped_lanes),
and `forgotten` tells the table's owner, which refuses such a lane rather than answer it as the
fresh run it is not, however many lanes came and went since.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from mcpgw.cassette.dropped_lanes import ForgottenLanes

MAX_LANES = 10_000  # about 15 MB of replay state at most; far more runs than one eval has in flight

V = TypeVar("V")


class LaneTable(OrderedDict[str, V], Generic[V]):
    def __init__(self, max_lanes: int = MAX_LANES, on_evict: Callable[[str, V], None] | None = None) -> None:
        super().__init__()
        self.max_lanes = max(1, max_lanes)
        self.on_evict = on_evict
        self.evicted = 0
        self.dropped = ForgottenLanes()  # names of dropped lanes, every one of them

    def forgotten(self, lane: str) -> bool:
        """Whether `lane` was dropped for room before (asked when it comes back; said once)."""
        return self.dropped.take(lane)

    def use(self, lane: str, make: Callable[[], V]) -> V:
        """The lane's state, made if new; marked most recently used."""
        value = self.get(lane)
        if value is None:
            value = self[lane] = make()
            while len(self) > self.max_lanes:
                old, state = self.popitem(last=False)
                self.evicted += 1
                self.dropped.add(old)
                if self.on_evict is not None:
                    self.on_evict(old, state)
        else:
            self.move_to_end(lane)
        return value
