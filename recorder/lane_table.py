"""Per-lane state, bounded: at most `max_lanes` lanes, the least recently used forgotten first.

A lane is a run id (X-Run-Id) or a client without one; each costs about 1.5 KB in replay
(its position in the recording, its history, what it follows), and run ids are the
clients' to choose: 10,000 of them held 13.6 MB for good. As with HTTP sessions
(gateway/sessions.py), the table has a cap and makes room by dropping the lane used
least recently; a lane in use is the most recent one, so only a lane that has been
idle while `max_lanes` others were used is dropped. A dropped lane that comes back
starts afresh, as a new run would.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

MAX_LANES = 10_000  # about 15 MB of replay state at most; far more runs than one eval has in flight

V = TypeVar("V")


class LaneTable(OrderedDict[str, V], Generic[V]):
    def __init__(self, max_lanes: int = MAX_LANES, on_evict: Callable[[str, V], None] | None = None) -> None:
        super().__init__()
        self.max_lanes = max(1, max_lanes)
        self.on_evict = on_evict
        self.evicted = 0

    def use(self, lane: str, make: Callable[[], V]) -> V:
        """The lane's state, made if new; marked most recently used."""
        value = self.get(lane)
        if value is None:
            value = self[lane] = make()
            while len(self) > self.max_lanes:
                old, state = self.popitem(last=False)
                self.evicted += 1
                if self.on_evict is not None:
                    self.on_evict(old, state)
        else:
            self.move_to_end(lane)
        return value
