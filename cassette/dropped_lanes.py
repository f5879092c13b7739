"""The names of lanes dropped for room, kept for as long as the process runs, outside its memory.

A lane table (cassette.lane_table) drops its least recently used lane when full. A dropped lane that comes back
must be refused, never answered as the fresh run it is not (its history is gone, the server's state and the
recording went on), however many other lanes came and went meanwhile: a bounded list of names forgot the oldest
once it overflowed, and a returning run then replayed from its start. Run ids are the clients' to choose, so
keeping every name in memory would be unbounded; they go into a small LMDB file of the process's own (a temporary
folder, opened at the first drop, removed at exit), a few dozen bytes each on disk and none in memory. Should that
file fail (a full disk), the tables fail closed: every lane they have not seen is treated as one that came back.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import shutil
import tempfile
import threading
from typing import Any

import lmdb

MAP_SIZE = 4 << 30  # sparse: a file this size is only what it holds
_MAX_NAME = 400  # LMDB keys stop at 511 bytes; a longer name is kept as its digest

_serial = itertools.count(1)
_lock = threading.Lock()
_env: Any = None
_folder: str | None = None


def _shared_env() -> Any:
    """One LMDB file for every table of the process, opened at the first drop."""
    global _env, _folder
    with _lock:
        if _env is None:
            _folder = tempfile.mkdtemp(prefix="mcpgw-dropped-lanes-")
            _env = lmdb.open(_folder, map_size=MAP_SIZE, subdir=True, sync=False, metasync=False, max_dbs=0)
            atexit.register(_remove)
        return _env


def _remove() -> None:
    global _env
    with _lock:
        if _env is not None:
            _env.close()
            _env = None
        if _folder is not None:
            shutil.rmtree(_folder, ignore_errors=True)


class ForgottenLanes:
    """One table's dropped lane names: `add` when dropped, `take` when a name comes back (said once per drop)."""

    def __init__(self) -> None:
        self._prefix = f"{next(_serial)}\0".encode()  # tables share the file, not their names
        self._used = False  # nothing dropped yet: no file to ask
        self.failed: str | None = None  # why names could no longer be kept (then every unknown name counts as back)
        self.count = 0  # names dropped and not (yet) back

    def add(self, name: str) -> None:
        if self.failed is not None:
            return
        try:
            with _shared_env().begin(write=True) as txn:
                if txn.put(self._key(name), b"", overwrite=False):
                    self.count += 1
            self._used = True
        except (lmdb.Error, OSError) as exc:
            self.failed = f"the names of dropped lanes could not be kept ({exc})"

    def take(self, name: str) -> bool:
        """Whether `name` was dropped before (and is now back: said once)."""
        if self.failed is not None:
            return True  # fail closed: a run that came back is never answered as new
        if not self._used:
            return False
        key = self._key(name)
        try:
            env = _shared_env()
            with env.begin() as txn:  # most names asked about are new ones: a read is enough for them
                back = txn.get(key) is not None
            if back:
                with env.begin(write=True) as txn:
                    txn.delete(key)
        except (lmdb.Error, OSError) as exc:
            self.failed = f"the names of dropped lanes could not be read ({exc})"
            return True
        if back:
            self.count -= 1
        return back

    def _key(self, name: str) -> bytes:
        raw = name.encode("utf-8", "surrogatepass")
        if len(raw) > _MAX_NAME:
            raw = b"#" + hashlib.sha256(raw).digest()
        return self._prefix + raw
