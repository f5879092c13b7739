"""One cassette = one LMDB environment directory, written by one background thread.

Writes never wait on each other: callers enqueue operations and (if they
must know the data is safe) await the batch's commit. The writer thread takes
everything queued, applies it in one transaction and commits: group commit,
so recording costs one commit per batch, not per call. A lone write that must
be committed before its answer, arriving while nothing else is queued, is
committed at once on the caller's thread instead: an unsynced LMDB commit of
one record takes about 12 us, the hand-off to the writer thread and back about
60 us (measured), and the hand-off also contends for the GIL. Appends made while a
hot call is answered at once are held for the event loop's turn instead, and committed together
at its end, before those calls' answers are written (gateway.http.commit_batch). Commits are not
fsync'ed (`sync=False`): a killed gateway loses nothing already committed,
since the bytes are in the OS page cache; an orderly close syncs to disk.
A failing write (full disk, full map) drops what someone waits for (they are told), keeps the rest (call-log
lines) in memory, at most MAX_PENDING, and retries them every RETRY_EVERY seconds until one commit succeeds; the
failure is visible in `health()`, and logged once when it starts and once when it ends, not once a commit.
Records given up (past MAX_PENDING, or still held at close) are counted per database in `dropped`.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb

from mcpgw.cassette.codec import pack, unpack
from mcpgw.cassette.mapped_pages import release as release_pages
from mcpgw.cassette.on_disk import CassetteDamaged as CassetteDamaged
from mcpgw.cassette.on_disk import CassetteFormatError as CassetteFormatError
from mcpgw.cassette.on_disk import check_data_file
from mcpgw.cassette.record_numbers import Packed as Packed
from mcpgw.cassette.record_numbers import seq_key as seq_key
from mcpgw.cassette.record_numbers import with_seq as with_seq
from mcpgw.gateway.http.commit_batch import collecting_batch

logger = logging.getLogger(__name__)

FORMAT = "mcpgw-cassette"
FORMAT_VERSION = 1
DATABASES = ("meta", "catalog", "exchanges", "calls", "runs")
MAP_SIZE = 1 << 36  # 64 GiB of address space; the file grows only as data arrives
MAX_PENDING = 200_000
RELEASE_EVERY = 16_384  # records a scan reads between two releases of the file's pages (about 30 MB of them)
RETRY_EVERY = 1.0  # seconds between retries of held records while writes fail (a full disk freed: written soon)
_WAKE = object()  # put in the writer's queue after a failure elsewhere: it then keeps the retry timer


class StoreClosed(Exception):
    pass


class StoreWriteError(Exception):
    """A commit failed (full disk, full map): the exchange is not safe on disk."""


class SequenceTaken(Exception):
    """An append's number is not past its db's last key: a commit fails rather than overwrite a record."""


class CassetteStore:
    def __init__(self, path: Path, *, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        if not readonly and create:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not (self.path / "data.mdb").exists():
            raise CassetteFormatError(f"{self.path}: no cassette here (no data.mdb)")
        check_data_file(self.path / "data.mdb")  # before mapping it: a short file would kill us with SIGBUS
        if (readonly or not create) and (self.path / "data.mdb").stat().st_size == 0:
            # LMDB would try to write its header pages and fail with "Bad file descriptor"
            raise CassetteDamaged(f"{self.path / 'data.mdb'}: damaged, empty (0 bytes)")
        # A read-only open takes no lock file when nobody holds one (a shipped cassette stays
        # untouched); when a writer may be active (lock.mdb exists), readers register in it.
        use_lock = not readonly or (self.path / "lock.mdb").exists()
        try:
            self.env = lmdb.open(
                str(self.path),
                max_dbs=len(DATABASES) + 2,
                map_size=MAP_SIZE,
                subdir=True,
                readonly=readonly,
                sync=False,
                metasync=False,
                lock=use_lock,
                create=create and not readonly,
            )
        except lmdb.Error as exc:
            raise CassetteFormatError(f"{self.path}: corrupt or not a cassette, cannot open it: {exc}") from None
        try:
            with self.env.begin() as txn:
                existing = {bytes(key).decode("utf-8", "replace") for key, _ in txn.cursor()}
            foreign = existing - set(DATABASES)
            if foreign:
                raise CassetteFormatError(f"{self.path}: not a {FORMAT} cassette (it holds other data)")
            self._fresh = not existing
            self.dbs = {name: self.env.open_db(name.encode(), create=not readonly) for name in DATABASES}
            self._check_format(readonly)
        except lmdb.Error as exc:
            self.env.close()
            raise CassetteFormatError(f"{self.path}: corrupt or not a {FORMAT} cassette ({exc})") from None
        except CassetteFormatError:
            self.env.close()
            raise
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._txn_lock = threading.Lock()  # one write transaction at a time: the writer thread's or an inline one
        self._count_lock = threading.Lock()
        self._queued = 0  # items handed to the writer thread and not yet committed (or failed)
        self._pending_retry: list[tuple[str, bytes | None, Any]] = []
        self._held: list[
            tuple[str, bytes | None, Any]
        ] = []  # appends held for the loop turn's batch (gateway.http.commit_batch)
        self._error: str | None = None
        self._failed_commits = 0  # in the current failure episode (logged once at its start, once at its end)
        self.dropped: dict[str, int] = {}  # records given up per db: past MAX_PENDING, or held still at close
        self._closed = False
        self._writer: threading.Thread | None = None
        self.commits = 0
        self.written = 0
        # The next sequence number per db as our last commit left them, valid in the transaction after it only:
        # any other writer (a worker, a CLI command) commits in between and moves the environment's txn id on.
        self._next_seq: dict[str, int] = {}
        self._next_seq_txn = -1

    # -- format ------------------------------------------------------------------

    def _check_format(self, readonly: bool) -> None:
        with self.env.begin(db=self.dbs["meta"], write=not readonly) as txn:
            raw = txn.get(b"format")
            if raw is None:
                if readonly or not self._fresh:
                    raise CassetteFormatError(f"{self.path}: not a {FORMAT} cassette (no format record)")
                txn.put(b"format", pack({"format": FORMAT, "version": FORMAT_VERSION, "created": time.time()}))
                return
            try:
                meta = unpack(raw)
            except Exception:
                meta = None
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise CassetteFormatError(f"{self.path}: not a {FORMAT} cassette")
            if meta.get("version") != FORMAT_VERSION:
                raise CassetteFormatError(
                    f"{self.path}: cassette format version {meta.get('version')}, this gateway reads version {FORMAT_VERSION}"
                )

    def put(self, db: str, key: bytes, value: Any, *, wait: bool = False) -> asyncio.Future[None] | None:
        """Queue one write; with `wait`, return a future resolved once it is committed."""
        return self.put_many([(db, key, value)], wait=wait)

    def append(
        self, db: str, value: dict[str, Any], *, wait: bool = False, packed: bytes | None = None
    ) -> asyncio.Future[None] | None:
        """Queue a record under the next sequence number of `db`, assigned inside the write
        transaction (so two processes appending to one cassette never overwrite each other).
        The record's "seq" field is set to it. `packed`: the record already packed with "seq" None as its
        first field, the number then written into those bytes (`with_seq`); else it is packed in the transaction."""
        return self._enqueue([(db, None, value if packed is None else Packed(value, packed))], wait)

    def put_many(self, items: list[tuple[str, bytes, Any]], *, wait: bool = False) -> asyncio.Future[None] | None:
        return self._enqueue([(db, key, pack(value)) for db, key, value in items], wait)

    def _enqueue(self, encoded: list[tuple[str, bytes | None, Any]], wait: bool) -> asyncio.Future[None] | None:
        if self._closed:
            raise StoreClosed(f"{self.path}: cassette is closed")
        if not wait:
            batch = collecting_batch()
            if batch is not None:  # a hot call answered at once: committed with the turn's others, before its answer
                with self._count_lock:
                    first = not self._held
                    self._held += encoded
                if first:
                    batch.hold(self)
                return None
        free = 0
        if self._held:  # held for a batch, so handed in before these: committed first, in one transaction with them
            with self._count_lock:
                free = len(self._held)  # nobody waits for these: kept for a retry if the commit fails
                encoded, self._held = self._held + encoded, []
        return self._submit(encoded, wait, free)

    def commit_held(self) -> None:
        """Commit what was held for a batch (gateway.http.commit_batch), as an append nobody waits for."""
        with self._count_lock:
            held, self._held = self._held, []
        if held:
            self._submit(held, False)

    def _submit(
        self, encoded: list[tuple[str, bytes | None, Any]], wait: bool, free: int = 0
    ) -> asyncio.Future[None] | None:
        """`free`: how many of the first ops nobody waits for (held appends handed in with a waited write)."""
        future = asyncio.get_running_loop().create_future() if wait else None
        if self._commit_inline(encoded, future, free):
            return future
        with self._count_lock:
            self._queued += 1
        self._queue.put((encoded, future and future.get_loop(), future, free))
        self._ensure_writer()
        return future

    def _commit_inline(
        self, encoded: list[tuple[str, bytes | None, Any]], future: asyncio.Future[None] | None, free: int = 0
    ) -> bool:
        """Commit now, on this thread, if nothing is queued or being written (so the order of
        records is the order they were handed in); False leaves the write to the writer thread.

        A commit (no fsync) costs 10-20 us here; waking the writer thread costs the caller more
        than that, in the hand-over of the GIL and the thread switch (a fifth of the gateway's
        GIL time on a live call, sampled), so even writes nobody waits for go inline when they can."""
        if not self._txn_lock.acquire(blocking=False):
            return False
        try:
            with self._count_lock:
                if self._queued:
                    return False
            outcome = self._commit(
                encoded, told=_told(len(encoded), future is not None, free) if free else future is not None
            )
            if future is not None:
                _settle(future, outcome)
        finally:
            self._txn_lock.release()
        if outcome is not None and self._pending_retry:  # records kept to retry: the writer thread keeps the timer
            self._ensure_writer()
            self._queue.put(_WAKE)
        return True

    def _ensure_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_loop, name=f"cassette-writer:{self.path.name}", daemon=True
            )
            self._writer.start()

    def _write_loop(self) -> None:
        while True:
            try:  # while records wait for a retry, a timer: they are written once space returns, with no new write
                first = self._queue.get(timeout=RETRY_EVERY if self._pending_retry else None)
            except queue.Empty:
                self._flush([])
                continue
            if first is None:
                self._flush([])
                return
            batch = [] if first is _WAKE else [first]
            while len(batch) < 4096:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._flush(batch)
                    return
                if item is not _WAKE:
                    batch.append(item)
            if batch:
                self._flush(batch)

    def _flush(self, batch: list[Any]) -> None:
        with self._txn_lock:
            told: list[bool] = []
            for encoded, _, future, free in batch:
                flags = _told(len(encoded), future is not None, free)
                told += [flags] * len(encoded) if isinstance(flags, bool) else flags
            outcome = self._commit([op for encoded, _, _, _ in batch for op in encoded], told)
            with self._count_lock:
                self._queued -= len(batch)
        for _, loop, future, _ in batch:
            if future is not None:
                loop.call_soon_threadsafe(_settle, future, outcome)

    def _commit(
        self, new_ops: list[tuple[str, bytes | None, Any]], told: list[bool] | bool = False
    ) -> BaseException | None:
        """One write transaction: what an earlier failure holds, then `new_ops`. Returns the
        failure to hand to whoever waits for these records, or None once they are committed.

        `told`: per op (or for all), whether someone waits for it. On a failure those are told the
        write failed, so they are dropped, never retried: a client told "failed" must not find its
        exchange in the cassette later. Ops nobody waits for (call-log lines) are held and retried."""
        ops = self._pending_retry + new_ops
        if not ops:
            return None
        try:
            with self.env.begin(write=True) as txn:
                txn_id = txn.id()
                # Read from the db's last key only when someone else may have appended since our last commit.
                next_seq = self._next_seq if txn_id == self._next_seq_txn else {}
                self._next_seq_txn = -1  # until this one commits
                for db, key, value in ops:
                    if key is None:  # an append: the next number after what any process wrote
                        if db not in next_seq:
                            cursor = txn.cursor(db=self.dbs[db])
                            next_seq[db] = (struct.unpack(">Q", cursor.key())[0] + 1) if cursor.last() else 1
                        seq = next_seq[db]
                        next_seq[db] += 1
                        value = (
                            with_seq(value, seq)
                            if db == "calls"
                            else pack(value.record if isinstance(value, Packed) else value)
                        )
                        # append: a number not past the db's last key is refused (put says False), never overwritten
                        if not txn.put(seq_key(seq), value, db=self.dbs[db], append=True):
                            raise SequenceTaken(f"{db} record number {seq} is taken")
                    else:
                        next_seq.pop(db, None)  # a key of its own in a db appended to: its last key read again
                        txn.put(key, value, db=self.dbs[db])
            # Appends are now keyed; a retry after a failure assigns them afresh.
            self._next_seq, self._next_seq_txn = next_seq, txn_id + 1
            self._pending_retry = []
            self.commits += 1
            self.written += len(ops)
            if self._failed_commits:
                logger.warning(
                    "%s: cassette writes work again after %d failed commit(s); the %d record(s) held are written",
                    self.path,
                    self._failed_commits,
                    len(ops) - len(new_ops),
                )
                self._failed_commits = 0
            self._error = None
            return None
        except (lmdb.Error, OSError, SequenceTaken) as exc:
            flags = [told] * len(new_ops) if isinstance(told, bool) else told
            ops = self._pending_retry + [op for op, waited in zip(new_ops, flags, strict=True) if not waited]
            if len(ops) > MAX_PENDING:  # the oldest given up, and counted: a call log says how many it lost
                for db, _, _ in ops[:-MAX_PENDING]:
                    self.dropped[db] = self.dropped.get(db, 0) + 1
                ops = ops[-MAX_PENDING:]
            self._pending_retry = ops
            lost = sum(self.dropped.values())
            held = f"{len(ops)} record(s) held in memory, retried every {RETRY_EVERY:g} s" if ops else "no record held"
            self._error = f"cassette write failing ({type(exc).__name__}: {exc}); {held}" + (
                f"; {lost} dropped (more than {MAX_PENDING} held)" if lost else ""
            )
            self._failed_commits += 1
            if self._failed_commits == 1:  # one line an episode: a full disk under load fails a commit per call
                logger.error("%s: %s", self.path, self._error)
            return StoreWriteError(f"{self.path}: could not write the cassette ({type(exc).__name__}: {exc})")

    def health(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "error": self._error,
            "commits": self.commits,
            "written": self.written,
            "held": len(self._pending_retry),
        }

    def close(self) -> None:
        """Flush what is queued, sync to disk, close. Bounded: a stuck writer is abandoned after 10 s."""
        if self._closed:
            return
        self.commit_held()  # a batch's records whose turn has not ended (a loop stopping): written, not lost
        self._closed = True
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout=10)
        if self._pending_retry and (self._writer is None or not self._writer.is_alive()):
            with self._txn_lock:  # one last try for what a failed commit held
                self._commit([])
        if self._pending_retry:
            logger.error(
                "%s: closing with %d record(s) that could not be written: %s",
                self.path,
                len(self._pending_retry),
                self._error,
            )
            for db, _, _ in self._pending_retry:
                self.dropped[db] = self.dropped.get(db, 0) + 1
            self._pending_retry = []
        try:
            self.env.sync(True)
        except lmdb.Error:
            pass
        self.env.close()

    # -- reading -------------------------------------------------------------------
    # Any failure to read or decode a record means damaged pages: one clear error naming the file.

    def get(self, db: str, key: bytes) -> Any:
        try:
            with self.env.begin(db=self.dbs[db]) as txn:
                raw = txn.get(key)
            return None if raw is None else unpack(raw)
        except Exception as exc:  # noqa: BLE001 - lmdb.Error, msgpack and decoding errors alike
            raise self._damaged(db, exc) from None

    def items(self, db: str) -> Iterator[tuple[bytes, Any]]:
        """Every record of `db`, in key order, one at a time (one read transaction). Every RELEASE_EVERY records
        the file's pages read so far are given back (cassette.mapped_pages): a scan's resident memory stays
        bounded whatever the cassette's size."""
        try:
            with self.env.begin(db=self.dbs[db]) as txn:
                for n, (key, raw) in enumerate(txn.cursor(), 1):
                    if not n % RELEASE_EVERY:
                        release_pages(self.path / "data.mdb")
                    yield bytes(key), unpack(raw)
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._damaged(db, exc) from None

    def count(self, db: str) -> int:
        try:
            with self.env.begin(db=self.dbs[db]) as txn:
                return txn.stat(self.dbs[db])["entries"]
        except lmdb.Error as exc:
            raise self._damaged(db, exc) from None

    def _damaged(self, db: str, exc: BaseException) -> CassetteDamaged:
        return CassetteDamaged(
            f"{self.path / 'data.mdb'}: damaged, cannot read its {db!r} records "
            f"({type(exc).__name__}: {str(exc)[:120]})"
        )


def _told(count: int, waited: bool, free: int) -> list[bool] | bool:
    """Per op of a write of `count`, whether someone waits for it: the first `free` never."""
    if not waited or not free:
        return waited
    return [False] * free + [True] * (count - free)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
