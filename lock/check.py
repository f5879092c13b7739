"""`mcpgw lock check`: does what runs still match what the lock pinned?

Starts the profile's servers that have a `locked:` section, compares each live
catalog with it (`gateway.tools.schema_diff`) and reports every change,
classified breaking or compatible. A server with no `locked:` section is
listed as unlocked and not started. Exit status: 2 when a locked server could
not be checked (it did not start, or its `locked:` data is unreadable), else 1
when any change is breaking, else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.tools.schema_diff import Change, diff_tools
from mcpgw.lock.config import ServerSpec, default_lock
from mcpgw.lock.locked import Locked, snapshot
from mcpgw.lock.lockfile import DEFAULT_LOCK, LockFile, open_lock
from mcpgw.lock.probe import Probe
from mcpgw.lock.progress import probe_with_progress

STATUSES = ("ok", "compatible", "breaking", "error", "unlocked")


@dataclass
class ServerCheck:
    server: str
    status: str  # one of STATUSES
    reason: str | None = None
    locked: Locked | None = None
    live: Locked | None = None
    changes: list[Change] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "status": self.status,
            "reason": self.reason,
            "locked": self.locked.summary() if self.locked else None,
            "live": self.live.summary() if self.live else None,
            "changes": [c.as_dict() for c in self.changes],
        }


def compare(spec: ServerSpec, locked: Locked, probe: Probe) -> ServerCheck:
    """One server: its locked data against what it offers now."""
    if not probe.ready or probe.catalog is None:
        return ServerCheck(
            spec.id, "error", f"could not check: {probe.state}: {probe.reason or 'no reason given'}", locked
        )
    live = snapshot(spec, probe.catalog, None)
    changes = diff_tools(locked.tools, live.tools)
    status = "breaking" if any(c.breaking for c in changes) else "compatible" if changes else "ok"
    notes = []
    if locked.pinned != live.pinned:
        notes.append(f"pin {locked.pinned} -> {live.pinned}")
    if (locked.server_name, locked.server_version) != (live.server_name, live.server_version):
        notes.append(f"server {locked.server_name} {locked.server_version} -> {live.server_name} {live.server_version}")
    return ServerCheck(spec.id, status, "; ".join(notes) or None, locked, live, changes)


def exit_status(checks: list[ServerCheck]) -> int:
    if any(c.status == "error" for c in checks):
        return 2
    return 1 if any(c.status == "breaking" for c in checks) else 0


def run_check(lock: LockFile, specs: list[ServerSpec], timeout: float) -> list[ServerCheck]:
    checks: dict[str, ServerCheck] = {}
    to_start: list[tuple[ServerSpec, Locked]] = []
    for spec in specs:
        try:
            locked = lock.locked(spec.id)
        except ConfigError as exc:
            checks[spec.id] = ServerCheck(spec.id, "error", exc.problem)
            continue
        if locked is None:
            checks[spec.id] = ServerCheck(spec.id, "unlocked", "no locked data; run `mcpgw lock refresh`")
        else:
            to_start.append((spec, locked))
    if to_start:
        probes = anyio.run(lambda: probe_with_progress([s for s, _ in to_start], timeout, "checking"))
        for (spec, locked), probe in zip(to_start, probes, strict=True):
            checks[spec.id] = compare(spec, locked, probe)
    return [checks[spec.id] for spec in specs]


def cmd_check(args: argparse.Namespace) -> int:
    lock = open_lock(args.config or default_lock() or DEFAULT_LOCK)
    specs = lock.select(args.profile, args.servers)
    checks = run_check(lock, specs, args.timeout)
    status = exit_status(checks)
    if args.json:
        summary = {s: sum(c.status == s for c in checks) for s in STATUSES}
        changes = [c for check in checks for c in check.changes]
        print(
            json.dumps(
                {
                    "lock": lock.source,
                    "profile": args.profile or lock.config.default_profile,
                    "exit_status": status,
                    "servers": [c.as_dict() for c in checks],
                    "summary": {
                        **summary,
                        "breaking_changes": sum(c.breaking for c in changes),
                        "compatible_changes": sum(not c.breaking for c in changes),
                    },
                },
                indent=2,
            )
        )
    else:
        print_report(checks, lock.source, status)
    return status


def print_report(checks: list[ServerCheck], source: str, status: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=160)
    colours = {"ok": "green", "compatible": "yellow", "breaking": "red", "error": "red", "unlocked": "white"}
    servers = Table(title=f"lock check: {source}")
    for column in ("server", "status", "locked", "live", "tools", "detail"):
        servers.add_column(column, overflow="fold")
    for check in checks:

        def info(data: Locked | None) -> str:
            return f"{data.server_name or ''} {data.server_version or ''}".strip() if data else ""

        tools = f"{check.locked.tool_count} -> {check.live.tool_count}" if check.locked and check.live else ""
        servers.add_row(
            check.server,
            f"[{colours[check.status]}]{check.status}[/]",
            info(check.locked),
            info(check.live),
            tools,
            check.reason or "",
        )
    console.print(servers)
    changes = [c for check in checks for c in check.changes]
    if changes:
        table = Table(title="changes since the lock")
        for column in ("server", "tool", "parameter", "change", "class", "detail"):
            table.add_column(column, overflow="fold")
        for check in checks:
            for c in sorted(check.changes, key=lambda c: (not c.breaking, c.tool, c.path)):
                table.add_row(
                    check.server,
                    c.tool,
                    c.path,
                    c.kind.replace("_", " "),
                    "[red]BREAKING[/]" if c.breaking else "[green]compatible[/]",
                    c.detail,
                )
        console.print(table)
    breaking = sum(c.breaking for c in changes)
    verdict = {0: "no breaking drift", 1: f"{breaking} breaking change(s)", 2: "some servers could not be checked"}[
        status
    ]
    console.print(f"{verdict}; {len(changes) - breaking} compatible change(s); exit status {status}")
