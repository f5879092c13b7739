"""Where judge exchanges are recorded, so re-scoring is deterministic and free.

The interface is two methods: `get(key) -> dict | None` and `put(key, dict)`.
Keys are digests of (model, messages, params) computed by `exchange_key`.

- `LmdbStore`: one LMDB environment directory, msgpack values (the same
  layout idea as the cassettes). Preferred.
- `JsonlStore`: one append-only JSONL file, loaded into memory on open; handy
  to read or diff by eye. The last line for a key wins.
- `MemoryStore`: a dict, for throwaway scoring.

`open_store(path)` picks JSONL for a path ending in .jsonl, LMDB otherwise.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Protocol

from mcpgw.evaluator.errors import StoreError

FORMAT_VERSION = 1


class JudgeStore(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...
    def put(self, key: str, value: dict[str, Any]) -> None: ...


def exchange_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    canonical = json.dumps(
        {"v": FORMAT_VERSION, "model": model, "messages": messages, "params": params},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class MemoryStore:
    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self._data.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._data[key] = value

    def close(self) -> None:
        pass


class JsonlStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        if self.path.exists():
            try:
                with self.path.open(encoding="utf-8") as handle:
                    for lineno, line in enumerate(handle, 1):
                        if line.strip():
                            entry = json.loads(line)
                            self._data[entry["key"]] = entry["value"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise StoreError(f"{self.path}:{lineno}: not a judge recording line ({exc})") from None
            except OSError as exc:
                raise StoreError(f"cannot read judge recordings {self.path}: {exc.strerror or exc}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        return self._data.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        line = json.dumps({"key": key, "value": value}, ensure_ascii=False, sort_keys=True)
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
            except OSError as exc:
                raise StoreError(f"cannot write judge recordings {self.path}: {exc.strerror or exc}") from None
            self._data[key] = value

    def close(self) -> None:
        pass


class LmdbStore:
    """One LMDB environment; values are msgpack maps. map_size is sparse, so 1 GiB costs nothing."""

    def __init__(self, path: str | Path, *, map_size: int = 1 << 30, readonly: bool = False) -> None:
        import lmdb
        import msgpack

        self.path = Path(path)
        self._pack, self._unpack = msgpack.packb, msgpack.unpackb
        try:
            if not readonly:
                self.path.mkdir(parents=True, exist_ok=True)
            elif not self.path.is_dir():
                raise StoreError(f"no judge recordings at {self.path}")
            self._env = lmdb.open(
                str(self.path), map_size=map_size, max_dbs=2, subdir=True, readonly=readonly, lock=not readonly
            )
            self._db = self._env.open_db(b"judge", create=not readonly)
        except lmdb.Error as exc:
            raise StoreError(f"cannot open judge recordings {self.path}: {exc}") from None
        except OSError as exc:
            raise StoreError(f"cannot open judge recordings {self.path}: {exc.strerror or exc}") from None
        self._lmdb_error = lmdb.Error

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._env.begin(db=self._db) as txn:
                raw = txn.get(key.encode())
        except self._lmdb_error as exc:
            raise StoreError(f"cannot read judge recordings {self.path}: {exc}") from None
        return None if raw is None else self._unpack(raw, raw=False)

    def put(self, key: str, value: dict[str, Any]) -> None:
        try:
            with self._env.begin(db=self._db, write=True) as txn:
                txn.put(key.encode(), self._pack(value, use_bin_type=True))
        except self._lmdb_error as exc:
            raise StoreError(f"cannot write judge recordings {self.path}: {exc}") from None

    def __len__(self) -> int:
        with self._env.begin(db=self._db) as txn:
            return txn.stat(self._db)["entries"]

    def close(self) -> None:
        self._env.close()


def open_store(path: str | Path | None, *, readonly: bool = False) -> JudgeStore:
    if path is None:
        return MemoryStore()
    if str(path).endswith(".jsonl"):
        return JsonlStore(path)
    return LmdbStore(path, readonly=readonly)
