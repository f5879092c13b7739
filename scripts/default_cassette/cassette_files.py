"""The cassette on disk: its digest, tidying it to a compact data.mdb alone, and what it holds."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from .settings import CASSETTE, ROOT, Failure


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tidy_cassette() -> list[str]:
    """Leave only data.mdb; compact it when that makes it smaller. Returns notes for the report."""
    import lmdb

    notes = []
    names = sorted(p.name for p in CASSETTE.iterdir())
    notes.append(f"the record gateway left in {CASSETTE.relative_to(ROOT)}/: {', '.join(names)}")
    lock = CASSETTE / "lock.mdb"
    if lock.exists():
        lock.unlink()
        notes.append("removed lock.mdb (LMDB's reader table, created by every writable open; not data)")
    unexpected = [p.name for p in CASSETTE.iterdir() if p.name != "data.mdb"]
    if unexpected:
        raise Failure(f"unexpected files in {CASSETTE}: {unexpected}")
    before = (CASSETTE / "data.mdb").stat().st_size
    with tempfile.TemporaryDirectory() as tmp:
        env = lmdb.open(str(CASSETTE), readonly=True, lock=False, max_dbs=16, subdir=True)
        try:
            env.copy(tmp, compact=True)
        finally:
            env.close()
        after = (Path(tmp) / "data.mdb").stat().st_size
        if after < before:
            shutil.move(str(Path(tmp) / "data.mdb"), CASSETTE / "data.mdb")
            notes.append(f"compacted data.mdb: {before / 1024:.0f} KiB -> {after / 1024:.0f} KiB")
    return notes


def cassette_summary() -> dict[str, Any]:
    from mcpgw.cassette.cassette import Cassette

    cassette = Cassette(CASSETTE, create=False, readonly=True)
    try:
        recorded = cassette.load()
        methods = Counter(e["method"] for entries in recorded.exchanges.values() for e in entries)
        return {
            "servers": sorted(recorded.catalogs),
            "tools": sum(len(c["catalog"]["tools"]) for c in recorded.catalogs.values()),
            "exchanges": dict(methods),
            "calls": cassette.store.count("calls"),
        }
    finally:
        cassette.store.env.close()
