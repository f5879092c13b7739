"""The cassettes of a run fanned out over nodes: each node's gateway writes a part of its
own (`<cassette>.parts/<stamp>-n<i>`), and the parts are merged into the run's cassette
when the run ends, in an order that depends on what was recorded, never on which node
recorded it.

Replay needs only the order within a lane (one task attempt, run on one node) and, outside
lanes, the order of one request key's answers; so exchanges are sorted by (lane, place in
that lane of its part) and lane-less ones (the servers' handshakes, once per node) by
(request key, place among that key's answers in its part, content). Call records likewise,
by run id. The merged cassette is written beside the target and swapped in at the end,
so a driver killed mid-merge leaves the parts and the previous cassette as they were.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.codec import pack

PARTS_SUFFIX = ".parts"


def parts_dir(cassette: Path) -> Path:
    return cassette.with_name(cassette.name + PARTS_SUFFIX)


def part_paths(cassette: Path) -> list[Path]:
    folder = parts_dir(cassette)
    return sorted(p for p in folder.iterdir() if (p / "data.mdb").is_file()) if folder.is_dir() else []


def _ordered(entries: list[dict[str, Any]], lane_field: str) -> list[tuple[Any, ...]]:
    """Sort keys of one part's records: its place in its lane (or among its key's answers)."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for entry in entries:
        lane = str(entry.get(lane_field) or "")
        group = (lane, "" if lane else str(entry.get("key") or entry.get("cassette_key") or ""))
        out.append((lane, seen[group], group[1], pack({k: v for k, v in entry.items() if k != "seq"})))
        seen[group] += 1
    return out


def merge_parts(target: Path, extra: list[Path] | None = None) -> int:
    """Merge `target` (if it exists), its parts and `extra` into `target`; remove the parts.
    Returns how many parts were merged."""
    parts = part_paths(target) + list(extra or ())
    if not parts:
        return 0
    sources = ([target] if (target / "data.mdb").is_file() else []) + parts
    exchanges: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    catalog: dict[bytes, list[Any]] = {}
    runs: dict[bytes, Any] = {}
    servers: dict[str, list[Any]] = {}
    for path in sources:
        cassette = Cassette(path, create=False, readonly=True)
        try:
            entries = [v for _, v in cassette.store.items("exchanges")]
            exchanges += zip(_ordered(entries, "lane"), entries, strict=True)
            records = [v for _, v in cassette.store.items("calls")]
            calls += zip(_ordered(records, "run_id"), records, strict=True)
            for key, value in cassette.store.items("catalog"):
                catalog.setdefault(bytes(key), []).append(value)
            for key, value in cassette.store.items("runs"):
                runs.setdefault(bytes(key), value)
            for sid, info in (cassette.info().get("servers") or {}).items():
                servers.setdefault(sid, []).append(info)
        finally:
            cassette.close()
    merging = target.with_name(target.name + ".merging")
    shutil.rmtree(merging, ignore_errors=True)  # left by a driver killed mid-merge
    out = Cassette(merging, create=True)
    try:
        for key, values in sorted(catalog.items()):
            out.store.put("catalog", key, min(values, key=pack))  # the same choice whatever the node order
        for db, items in (("exchanges", exchanges), ("calls", calls)):
            for _, value in sorted(items, key=lambda item: item[0]):
                out.store.append(db, dict(value))
        for key, value in runs.items():
            out.store.put("runs", key, value)
        # In the order recorded (every part has the run's servers in the order it was given them):
        # replay lists tools in this order, and the agent's tool list is part of what was asked.
        out.write_info({sid: min(infos, key=pack) for sid, infos in servers.items()})
    finally:
        out.close()
    previous = target.with_name(target.name + ".previous")
    if target.exists():
        for entry in target.iterdir():  # replay logs kept beside the recording move with it
            if entry.name not in ("data.mdb", "lock.mdb"):
                entry.rename(merging / entry.name)
        target.rename(previous)
    merging.rename(target)
    shutil.rmtree(previous, ignore_errors=True)
    for part in parts:
        shutil.rmtree(part, ignore_errors=True)
    folder = parts_dir(target)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    return len(parts)
