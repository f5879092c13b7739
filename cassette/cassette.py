"""A cassette: what one recording holds, on top of the LMDB store.

    meta       b"format" (store), b"info": created, gateway version, the lock entries recorded
    catalog    server id -> {catalog: initialize + lists as sent, provenance}
    exchanges  8-byte sequence -> {key, server, method, params, result | error, provenance}
    calls      8-byte sequence -> call-log record (recorder.calllog)
    runs       run summaries (replay hit/miss statistics, drift results)

Exchanges are keyed by sequence so that loading them back gives recorded order;
`load()` groups them by request key for replay.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpgw.cassette.paths import cassette_path
from mcpgw.cassette.store import CassetteFormatError, CassetteStore
from mcpgw.gateway import __version__
from mcpgw.gateway.errors.tree import CassetteError


@dataclass
class Recorded:
    """A cassette loaded for replay."""

    info: dict[str, Any]
    catalogs: dict[str, dict[str, Any]]  # server -> {"catalog": ..., "provenance": ...}
    exchanges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # request key -> entries, in order
    by_server: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))


class Cassette:
    def __init__(self, path: Path, *, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        self.store = CassetteStore(self.path, create=create, readonly=readonly)
        self.readonly = readonly

    # -- writing -------------------------------------------------------------------

    def write_info(self, servers: dict[str, dict[str, Any]]) -> None:
        info = self.store.get("meta", b"info") or {"created": time.time(), "servers": {}}
        info["servers"] = {**info.get("servers", {}), **servers}
        info["gateway_version"] = __version__
        info["updated"] = time.time()
        self.store.put("meta", b"info", info)

    def record_catalog(self, server: str, catalog: dict[str, Any], provenance: dict[str, Any]) -> None:
        self.store.put("catalog", server.encode(), {"catalog": catalog, "provenance": provenance})

    def record_exchange(self, entry: dict[str, Any], *, wait: bool = True) -> Any:
        """Queue one exchange; with `wait`, a future resolved once it is on disk (kill -9 safe)."""
        return self.store.append("exchanges", entry, wait=wait)

    def record_run(self, summary: dict[str, Any]) -> None:
        self.store.put("runs", f"{summary.get('started', time.time()):.6f}".encode(), summary)

    def close(self) -> None:
        self.store.close()

    # -- reading ---------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return self.store.get("meta", b"info") or {}

    def load(self) -> Recorded:
        recorded = Recorded(self.info(), {k.decode(): v for k, v in self.store.items("catalog")})
        for _, entry in self.store.items("exchanges"):
            recorded.exchanges.setdefault(entry["key"], []).append(entry)
            recorded.by_server[entry["server"]].append(entry)
        return recorded

    def runs(self) -> list[dict[str, Any]]:
        return [v for _, v in self.store.items("runs")]


def open_named(cassettes_dir: Path, name: str, *, create: bool, readonly: bool = False) -> Cassette:
    """Cassette `name` of a cassettes folder; a clear CassetteError when it is missing, foreign or unreadable."""
    path = cassette_path(cassettes_dir, name, write=create or not readonly)  # writes stay in the folder
    if not create and not (path / "data.mdb").exists():
        known = (
            sorted(p.name for p in cassettes_dir.glob("*") if (p / "data.mdb").exists())
            if cassettes_dir.exists()
            else []
        )
        raise CassetteError(f"no cassette {name!r} in {cassettes_dir}/ (cassettes there: {', '.join(known) or 'none'})")
    return open_path(path, create=create, readonly=readonly)


def open_path(path: Path, *, create: bool, readonly: bool = False) -> Cassette:
    """The cassette in folder `path`; a clear CassetteError when it is foreign or unreadable."""
    try:
        return Cassette(path, create=create, readonly=readonly)
    except CassetteFormatError as exc:
        raise CassetteError(str(exc)) from None
    except OSError as exc:  # e.g. the cassettes folder is a file, or not writable
        raise CassetteError(f"cannot open cassette {path}: {exc.strerror or exc}") from None
