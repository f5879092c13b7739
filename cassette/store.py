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
A failing write (full disk, full map) keeps its batch in memory and retries,
and the failure is visible in `health()`.
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
from typing import Any, NamedTuple

import lmdb

from mcpgw.cassette.codec import pack, unpack
from mcpgw.cassette.on_disk import CassetteDamaged as CassetteDamaged
from mcpgw.cassette.on_disk import CassetteFormatError as CassetteFormatError
from mcpgw.cassette.on_disk import check_data_file
from mcpgw.gateway.http.commit_batch import collecting_batch

logger = logging.getLogger(__name__)

FORMAT = "mcpgw-cassette"
FORMAT_VERSION = 1
DATABASES = ("meta", "catalog", "exchanges", "calls", "runs")
MAP_SIZE = 1 << 36  # 64 GiB of address space; the file grows only as data arrives
MAX_PENDING = 200_000


class StoreClosed(Exception):
    pass


class StoreWriteError(Exception):
    """A commit failed (full disk, full map): the exchange is not safe on disk."""


class SequenceTaken(Exception):
    """An append's number is not past its db's last key: a commit fails rather than overwrite a record."""


seq_key = struct.Struct(">Q").pack  # a record's number as its key: 8 bytes, big-endian (so keys sort as numbers)


class Packed(NamedTuple):
    """A record to append, and its bytes packed with "seq" None as its first field."""

    record: dict[str, Any]
    data: bytes


_SEQ_NONE = b"\xa3seq\xc0"  # msgpack: the key "seq", then nil


def with_seq(value: dict[str, Any] | Packed, seq: int) -> bytes:
    """`pack({**record, "seq": seq})`; for a `Packed` record, its bytes with the number written in (the same bytes:
    a map's header, then "seq" and its value, then the rest as packed), without packing it again."""
    if isinstance(value, Packed):
        data = value.data
        head = 1 if 0x80 <= data[0] <= 0x8F else 3 if data[0] == 0xDE else 5 if data[0] == 0xDF else 0
        if head and data[head : head + 5] == _SEQ_NONE:
            return b"".join((data[:head], _SEQ_NONE[:4], pack(seq), data[head + 5 :]))
        value = value.record
    return pack({**value, "seq": seq})


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
        if self._held:  # held for a batch, so handed in before these: committed first, in one transaction with them
            with self._count_lock:
                encoded, self._held = self._held + encoded, []
        return self._submit(encoded, wait)

    def commit_held(self) -> None:
        """Commit what was held for a batch (gateway.http.commit_batch), as an append nobody waits for."""
        with self._count_lock:
            held, self._held = self._held, []
        if held:
            self._submit(held, False)

    def _submit(self, encoded: list[tuple[str, bytes | None, Any]], wait: bool) -> asyncio.Future[None] | None:
        future = asyncio.get_running_loop().create_future() if wait else None
        if self._commit_inline(encoded, future):
            return future
        with self._count_lock:
            self._queued += 1
        self._queue.put((encoded, future and future.get_loop(), future))
        self._ensure_writer()
        return future

    def _commit_inline(self, encoded: list[tuple[str, bytes | None, Any]], future: asyncio.Future[None] | None) -> bool:
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
            outcome = self._commit(encoded, told=future is not None)
            if future is not None:
                _settle(future, outcome)
            return True
        finally:
            self._txn_lock.release()

    def _ensure_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_loop, name=f"cassette-writer:{self.path.name}", daemon=True
            )
            self._writer.start()

    def _write_loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                self._flush([])
                return
            batch = [first]
            while len(batch) < 4096:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._flush(batch)
                    return
                batch.append(item)
            self._flush(batch)

    def _flush(self, batch: list[Any]) -> None:
        with self._txn_lock:
            outcome = self._commit(
                [op for encoded, _, _ in batch for op in encoded],
                [future is not None for encoded, _, future in batch for _ in encoded],
            )
            with self._count_lock:
                self._queued -= len(batch)
        for _, loop, future in batch:
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
            self._error = None
            return None
        except (lmdb.Error, OSError, SequenceTaken) as exc:
            self._error = (
                f"cassette write failing ({type(exc).__name__}: {exc}); {len(ops)} record(s) held in memory, retrying"
            )
            logger.error("%s: %s", self.path, self._error)
            if len(ops) > MAX_PENDING:
                logger.error(
                    "%s: %d record(s) dropped: more than %d waiting", self.path, len(ops) - MAX_PENDING, MAX_PENDING
                )
            flags = [told] * len(new_ops) if isinstance(told, bool) else told
            ops = self._pending_retry + [op for op, waited in zip(new_ops, flags) if not waited]
            self._pending_retry = ops[-MAX_PENDING:]
            return StoreWriteError(f"{self.path}: could not write the cassette ({type(exc).__name__}: {exc})")

    def health(self) -> dict[str, Any]:
        return {"path": str(self.path), "error": self._error, "commits": self.commits, "written": self.written}

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
        try:
            with self.env.begin(db=self.dbs[db]) as txn:
                for key, raw in txn.cursor():
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


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
