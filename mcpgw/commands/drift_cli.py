"""`mcpgw drift`: how far today's live servers have moved from a cassette."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.specs.spec_record import spec_from_dict
from mcpgw.lock.config import load_config
from mcpgw.replay.compare import parse_rules
from mcpgw.replay.drift import CatalogDiff, DriftReport, MakeUpstream, run_drift

LOCK_FILE = "servers.lock.yaml"  # what `mcpgw serve` and `drift --learn`'s advice use


def cmd_drift(args: argparse.Namespace, make_upstream: MakeUpstream, catalog_diff: CatalogDiff | None) -> int:
    """The composition root (mcpgw/commands/drift.py) gives the live upstreams, as `serve` builds them,
    and the catalog classification of `lock check`."""
    from mcpgw.cassette.cassette import open_named

    settings = Settings(cassettes_dir=Path(args.cassettes_dir), call_timeout=args.call_timeout)
    cassette = open_named(settings.cassettes_dir, args.cassette, create=False)
    try:
        recorded = cassette.load()
        specs, entries = choose_entries(args, recorded)
        if not specs:
            raise GatewayError(
                f"no server of cassette {args.cassette!r} to check (recorded: {sorted(recorded.catalogs)})"
            )
        rules = {sid: parse_rules(list(spec.ignore)) for sid, spec in specs.items()}
        if not args.json:
            print_entries(entries)
        report = anyio.run(lambda: _run(args, recorded, specs, rules, settings, make_upstream, catalog_diff))
        cassette.record_run(report.summary())
    finally:
        cassette.close()
    full = {**report.as_dict(), "entries": entries}
    if args.output:
        try:
            Path(args.output).write_text(json.dumps(full, indent=2, default=str))
        except OSError as exc:  # checked before the run, but the disk can still be full or read-only
            raise GatewayError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    if args.json:
        print(json.dumps(full, indent=2, default=str))
    else:
        print_report(report)
    return 1 if report.drift_share > args.max_drift else 0


def choose_entries(args: argparse.Namespace, recorded: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Which lock entry (launch command, ignore rules) each recorded server is checked with.

    The lock file (--config, else ./servers.lock.yaml when present) wins, so that rules added
    after `drift --learn` take effect; servers it does not list keep the entry stored in the cassette.
    """
    stored = {sid: spec_from_dict(d) for sid, d in recorded.info.get("servers", {}).items()}
    lock_path = args.config or (LOCK_FILE if Path(LOCK_FILE).is_file() else None)
    from_lock: dict[str, Any] = {}
    if lock_path:
        config = load_config(lock_path)
        chosen = (
            config.select(args.profile, args.servers)
            if (args.profile or args.servers)
            else list(config.servers.values())
        )
        from_lock = {s.id: s for s in chosen if s.id in recorded.catalogs}
    wanted = set(recorded.catalogs) | set(stored)
    if args.servers:
        wanted &= set(args.servers)
    elif args.profile and lock_path:
        wanted &= set(from_lock)
    specs: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for sid in sorted(wanted):
        if sid in from_lock:
            specs[sid], sources[sid] = from_lock[sid], str(lock_path)
        elif sid in stored:
            specs[sid], sources[sid] = stored[sid], "cassette"
    entries = {
        "lock_file": str(lock_path) if lock_path else None,
        "servers": {sid: {"entry": sources[sid], "ignore_rules": len(spec.ignore)} for sid, spec in specs.items()},
    }
    return specs, entries


def print_entries(entries: dict[str, Any]) -> None:
    """Say which entries and ignore rules are in force, before the (long) run starts."""
    servers = entries["servers"]
    by_source: dict[str, list[str]] = {}
    for sid, info in servers.items():
        by_source.setdefault(info["entry"], []).append(f"{sid} ({info['ignore_rules']} ignore rule(s))")
    if entries["lock_file"] is None:
        print(
            f"mcpgw: no ./{LOCK_FILE} here and no --config: using the entries recorded in the cassette", file=sys.stderr
        )
    for source, names in by_source.items():
        where = "entries recorded in the cassette" if source == "cassette" else f"entries of {source}"
        print(f"mcpgw: {where}: {', '.join(names)}", file=sys.stderr)


async def _run(
    args: argparse.Namespace,
    recorded: Any,
    specs: dict[str, Any],
    rules: dict[str, Any],
    settings: Settings,
    make_upstream: MakeUpstream,
    catalog_diff: CatalogDiff | None,
) -> DriftReport:
    from rich.progress import Progress

    logging.getLogger("mcpgw.gateway.upstreams.isolation").setLevel(
        logging.WARNING
    )  # a line per recorded run's instance is noise here
    with Progress(transient=True, disable=args.json or not sys.stderr.isatty()) as progress:
        task = progress.add_task("re-issuing recorded calls", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return await run_drift(
            args.cassette,
            recorded,
            specs,
            rules,
            settings,
            include_unsafe=args.include_unsafe,
            learn=args.learn,
            concurrency=args.concurrency,
            progress=advance,
            catalog_diff=catalog_diff,
            make_upstream=make_upstream,
        )


def print_report(report: DriftReport) -> None:
    from rich.table import Table

    from mcpgw.gateway.commandline.console import table_console

    console = table_console()
    summary = report.summary()
    console.print(
        f"[bold]drift of {report.cassette}[/]: {summary['calls']} recorded calls; "
        f"{summary['identical']} identical, {summary['equal_after_ignore']} equal after ignore rules, "
        f"[yellow]{summary['changed']} changed[/], [red]{summary['failing']} failing[/], {summary['skipped']} skipped "
        f"(drift {100 * report.drift_share:.1f}%)"
    )
    servers = Table("server", "state", "recorded", "live")
    for sid, info in report.servers.items():
        version = lambda i: f"{(i or {}).get('name', '')} {(i or {}).get('version', '')}".strip()  # noqa: E731
        state = info["state"] + (f" ({info['reason']})" if info["state"] != "ready" and info.get("reason") else "")
        servers.add_row(sid, state, version(info.get("recorded")), version(info.get("live")))
    console.print(servers)
    table = Table("server:tool", "identical", "equal after ignore", "changed", "failing", "skipped")
    for tool, counts in report.by_tool().items():
        table.add_row(
            tool, *(str(counts[v]) for v in ("identical", "equal_after_ignore", "changed", "failing", "skipped"))
        )
    console.print(table)
    flips = [c for c in report.calls if any(d.path == "$.isError" for d in c.differences)]
    for call in flips + [c for c in report.calls if c.verdict in ("changed", "failing") and c not in flips]:
        console.print(
            f"[bold]{call.server}:{call.tool}[/] {json.dumps(call.arguments, default=str)[:100]} -> {call.verdict}"
        )
        if call.error:
            console.print(f"    {call.error}")
        for difference in call.differences[:8]:
            console.print(f"    {difference.describe()}")
    for server, changes in report.catalog.items():
        if changes and (changes.get("breaking") or changes.get("compatible")):
            console.print(f"[bold]catalog {server}[/]: {json.dumps(changes, default=str)[:600]}")
    if report.proposals:
        console.print("[bold]proposed ignore rules[/] (add under each server in the lock file):")
        for label, rule in report.proposals.items():
            server, tool = label.split(":", 1)
            console.print(f"  {server}:\n    ignore:\n      - tool: {tool}\n        paths: {json.dumps(rule['paths'])}")
