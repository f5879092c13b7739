"""`mcpgw lock refresh`: start a profile's servers, write what each offers under its `locked:` key.

A server whose catalog, name, version and protocol are unchanged keeps its
block as it is (no churn in the file's history). A server that fails to start
keeps its previous block and is reported; the others are still written.
Exit status: 0 when every server was locked, 1 when some failed, 2 on errors.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.tools.schema_diff import diff_tools
from mcpgw.lock.locked import KEY, Locked, render, snapshot
from mcpgw.lock.lockedit import check_text, set_entry_key, write_atomic
from mcpgw.lock.lockfile import DEFAULT_LOCK, open_lock
from mcpgw.lock.probe import Probe
from mcpgw.lock.progress import probe_with_progress


@dataclass
class Refreshed:
    server: str
    result: str  # locked | updated | unchanged | failed
    detail: str
    locked: Locked | None = None


def cmd_refresh(args: argparse.Namespace) -> int:
    lock = open_lock(args.config or DEFAULT_LOCK)  # it writes: only a lock of the user's own
    specs = lock.select(args.profile, args.servers)
    probes = anyio.run(lambda: probe_with_progress(specs, args.timeout, "locking"))
    refreshed = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = lock.text
    results = []
    for probe in probes:
        result = _refresh_one(lock, probe, refreshed)
        if result.locked is not None and result.result != "unchanged":
            block = result.locked
            text = set_entry_key(text, probe.spec.id, KEY, lambda column, b=block: render(b, column), lock.source)
        results.append(result)
    if text != lock.text:
        check_text(text, lock.source)
        write_atomic(lock.path, text)
    _report(results, lock.source, written=text != lock.text)
    return 1 if any(r.result == "failed" for r in results) else 0


def _refresh_one(lock, probe: Probe, refreshed: str) -> Refreshed:
    sid = probe.spec.id
    if not probe.ready or probe.catalog is None:
        return Refreshed(sid, "failed", f"{probe.state}: {probe.reason or 'no reason given'}")
    new = snapshot(probe.spec, probe.catalog, refreshed)
    try:
        old = lock.locked(sid)
    except ConfigError as exc:
        return Refreshed(sid, "updated", f"replaced an unreadable {KEY} section ({exc.problem})", new)
    if old is None:
        return Refreshed(sid, "locked", f"{new.tool_count} tools", new)
    if old.same_as(new):
        return Refreshed(sid, "unchanged", f"{new.tool_count} tools", old)
    changes = diff_tools(old.tools, new.tools)
    parts = []
    if old.pinned != new.pinned:
        parts.append(f"pin {old.pinned} -> {new.pinned}")
    if (old.server_name, old.server_version) != (new.server_name, new.server_version):
        parts.append(f"server {old.server_name} {old.server_version} -> {new.server_name} {new.server_version}")
    breaking = sum(c.breaking for c in changes)
    if changes:
        parts.append(f"{len(changes)} change(s), {breaking} breaking")
    return Refreshed(sid, "updated", "; ".join(parts) or "protocol changed", new)


def _report(results: list[Refreshed], source: str, written: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    colours = {"locked": "green", "updated": "yellow", "unchanged": "white", "failed": "red"}
    table = Table(title=f"lock refresh: {source}" + (" (written)" if written else " (no change)"))
    for column in ("server", "result", "server info", "tools", "catalog digest", "detail"):
        table.add_column(column, overflow="fold")
    for r in results:
        info = f"{r.locked.server_name or ''} {r.locked.server_version or ''}".strip() if r.locked else ""
        table.add_row(
            r.server,
            f"[{colours[r.result]}]{r.result}[/]",
            info,
            str(r.locked.tool_count) if r.locked else "",
            r.locked.catalog_digest if r.locked else "",
            r.detail,
        )
    Console(file=sys.stdout, width=160).print(table)
