"""Records committed together, answers written after: calls answered in one event-loop turn share one commit.

A hot call answered at once (gateway.runtime.eager) makes its call-log record and its answer in the same turn, and
committing each record alone is one LMDB write transaction per call (measured: about a tenth of a replayed
call's CPU). While the hot lane answers a call at once (`collect`), a store holds what it is given to
append (cassette.store) instead of committing it, and the call's answer is held with it (`after`); once the
turn's other callbacks have run (one `call_soon`), everything held is committed - one transaction per store
for all the calls of the turn - and then the held answers are written, in the order they were made.

Group commit: a batch that holds answers waits one more turn of the event loop (`call_soon` again: a poll that
does not block) while the turn before brought it more, up to EXTRA_TURNS turns or HELD_ANSWERS answers. Calls
that arrive while a batch is being made (other clients' next requests) then share its commit: measured with
8 clients, 2.9 calls a commit instead of 1.6, and about 4% less CPU a replayed call (a commit is six writes of
pages to the file); a lone call waits one poll, a few microseconds. A batch with no answer held (records
appended outside the lane) commits at the end of its turn, as before.

A hot call answered from a task (a live call, which waits on its server) joins the batch of the turn in which it
ends: its task is marked (`collect_in_task`), so the record it appends is held the same way, and its answer is
written through `after`; several live calls ending in one turn (their servers' answers read together) share a
commit as well.

So every answer still leaves after its record is committed: a client, or any process, that reads the log
once it has an answer finds the record there, as before. A commit that fails is what it was before too: the
store keeps the records to retry and says so (/status), and the answers are written.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

logger = logging.getLogger(__name__)

EXTRA_TURNS = 3  # turns a batch may wait for more calls after its first, while each brings some
HELD_ANSWERS = 64  # answers past which a batch commits without waiting for more


class Holder(Protocol):
    def commit_held(self) -> None: ...  # commit what it held for the batch (cassette.store.CassetteStore)


class _Local(threading.local):
    batch: Batch | None = None  # the batch collecting on this thread, if any


_LOCAL = _Local()
_TASK: ContextVar[Batch | None] = ContextVar("mcpgw_commit_batch", default=None)  # a task's (`collect_in_task`)


def collecting_batch() -> Batch | None:
    """The batch a store appending here hands its records to: the one collecting on this thread (a call answered at
    once), else the current task's (`collect_in_task`), on its loop's thread only; None: commit as usual."""
    batch = _LOCAL.batch
    if batch is None:
        batch = _TASK.get()
        if batch is not None and batch._thread != threading.get_ident():
            return None  # a thread the task's context was copied into (to_thread): not the loop's
    return batch


class Batch:
    """One event loop's batch: the stores holding records, and the answers waiting for their commit."""

    __slots__ = ("_loop", "_thread", "_holders", "_answers", "_scheduled", "_waited", "_seen")

    def __init__(self) -> None:
        self._loop: Any = None
        self._thread = 0  # the loop's thread
        self._holders: dict[Holder, None] = {}  # in the order they first held (a dict: ordered, unique)
        self._answers: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        self._scheduled = False
        self._waited = 0  # turns waited for more calls
        self._seen = 0  # answers held when it last looked

    def collect(self, loop: Any) -> None:
        """From now on, appends made on this thread are held for this batch (until `stop`), committed in `loop`."""
        self._loop = loop
        _LOCAL.batch = self

    def collect_in_task(self, loop: Any) -> None:
        """Appends made by the current task (and the tasks it starts) are held for this batch, committed in `loop`
        (the task's: called from it)."""
        self._loop = loop
        self._thread = threading.get_ident()
        _TASK.set(self)

    @staticmethod
    def stop() -> None:
        _LOCAL.batch = None

    def hold(self, holder: Holder) -> None:
        """`holder` keeps records for this batch: commit them at the end of the turn."""
        self._holders[holder] = None
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.commit)

    def after(self, write: Callable[..., None], *args: Any) -> None:
        """`write(*args)` once what is held is committed; at once when nothing is."""
        if self._scheduled:
            self._answers.append((write, args))
        else:
            write(*args)

    def commit(self) -> None:
        """Commit what every store holds, then write the answers that waited for it; or, while turns bring more
        answers (see above), wait one more turn for them."""
        held = len(self._answers)
        if held != self._seen and self._waited < EXTRA_TURNS and held < HELD_ANSWERS:
            self._waited += 1
            self._seen = held
            self._loop.call_soon(self.commit)
            return
        self._waited = self._seen = 0
        self._scheduled = False
        holders, self._holders = self._holders, {}
        answers, self._answers = self._answers, []
        for holder in holders:
            try:
                holder.commit_held()
            except Exception:  # noqa: BLE001 - a bug: the answers must still leave
                logger.exception("committing held call-log records failed")
        for write, args in answers:
            try:
                write(*args)
            except Exception:  # noqa: BLE001 - one connection's failure is not the others'
                logger.exception("writing an answer held for its record failed")
