"""Records committed together, answers written after: calls answered in one event-loop turn share one commit.

A hot call answered at once (gateway.eager) makes its call-log record and its answer in the same turn, and
committing each record alone is one LMDB write transaction per call (measured: about a tenth of a replayed
call's CPU). While the hot lane answers a call at once (`collect`), a store holds what it is given to
append (recorder.store) instead of committing it, and the call's answer is held with it (`after`); once the
turn's other callbacks have run (one `call_soon`), everything held is committed - one transaction per store
for all the calls of the turn - and then the held answers are written, in the order they were made.

So every answer still leaves after its record is committed: a client, or any process, that reads the log
once it has an answer finds the record there, as before. A commit that fails is what it was before too: the
store keeps the records to retry and says so (/status), and the answers are written.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class Holder(Protocol):
    def commit_held(self) -> None: ...  # commit what it held for the batch (recorder.store.CassetteStore)


class _Local(threading.local):
    batch: Batch | None = None  # the batch collecting on this thread, if any


_LOCAL = _Local()


def collecting_batch() -> Batch | None:
    """The batch a store appending on this thread hands its records to (None: commit as usual)."""
    return _LOCAL.batch


class Batch:
    """One event loop's batch: the stores holding records, and the answers waiting for their commit."""

    __slots__ = ("_loop", "_holders", "_answers", "_scheduled")

    def __init__(self) -> None:
        self._loop: Any = None
        self._holders: dict[Holder, None] = {}  # in the order they first held (a dict: ordered, unique)
        self._answers: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        self._scheduled = False

    def collect(self, loop: Any) -> None:
        """From now on, appends made on this thread are held for this batch (until `stop`), committed in `loop`."""
        self._loop = loop
        _LOCAL.batch = self

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
        """Commit what every store holds, then write the answers that waited for it."""
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

