"""`mcpgw drift`: how far today's live servers have moved from a cassette."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anyio

from gateway.config import load_config, spec_from_dict
from gateway.errors import GatewayError
from gateway.settings import Settings
from replay.compare import parse_rules
from replay.drift import DriftReport, run_drift


def add_commands(sub: Any) -> None:
    drift = sub.add_parser("drift", help="re-issue a cassette's calls live and report what changed")
    drift.add_argument("--cassette", required=True)
    drift.add_argument("--cassettes-dir", default="cassettes")
    drift.add_argument("--config", help="lock file whose entries (and ignore rules) to use; default: those recorded")
    drift.add_argument("--profile")
    drift.add_argument("--servers", nargs="+")
    drift.add_argument("--include-unsafe", action="store_true", help="also re-issue destructive / unsafe tools")
    drift.add_argument("--learn", action="store_true", help="call each tool twice live and propose ignore rules")
    drift.add_argument("--max-drift", type=float, default=0.0, help="largest share of changed/failing calls that exits 0")
    drift.add_argument("--concurrency", type=int, default=4)
    drift.add_argument("--call-timeout", type=float, default=60.0)
    drift.add_argument("--json", action="store_true")
    drift.add_argument("-o", "--output", help="also write the full JSON report here")
    drift.set_defaults(func=cmd_drift)


def cmd_drift(args: argparse.Namespace) -> int:
    from recorder.cassette import open_named

    settings = Settings(cassettes_dir=Path(args.cassettes_dir), call_timeout=args.call_timeout)
    cassette = open_named(settings.cassettes_dir, args.cassette, create=False)
    try:
        recorded = cassette.load()
        if args.config:
            config = load_config(args.config)
            chosen = config.select(args.profile, args.servers) if (args.profile or args.servers) else list(config.servers.values())
            specs = {s.id: s for s in chosen if s.id in recorded.catalogs}
        else:
            specs = {sid: spec_from_dict(d) for sid, d in recorded.info.get("servers", {}).items()}
            if args.servers:
                specs = {k: v for k, v in specs.items() if k in args.servers}
        if not specs:
            raise GatewayError(f"no server of cassette {args.cassette!r} to check (recorded: {sorted(recorded.catalogs)})")
        rules = {sid: parse_rules(list(spec.ignore)) for sid, spec in specs.items()}
        report = anyio.run(lambda: _run(args, recorded, specs, rules, settings))
        cassette.record_run(report.summary())
    finally:
        cassette.close()
    if args.output:
        Path(args.output).write_text(json.dumps(report.as_dict(), indent=2, default=str))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, default=str))
    else:
        print_report(report)
    return 1 if report.drift_share > args.max_drift else 0


async def _run(args: argparse.Namespace, recorded: Any, specs: dict[str, Any], rules: dict[str, Any], settings: Settings) -> DriftReport:
    from rich.progress import Progress

    catalog_diff = _catalog_diff()
    with Progress(transient=True, disable=args.json or not sys.stderr.isatty()) as progress:
        task = progress.add_task("re-issuing recorded calls", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return await run_drift(args.cassette, recorded, specs, rules, settings, include_unsafe=args.include_unsafe,
                               learn=args.learn, concurrency=args.concurrency, progress=advance, catalog_diff=catalog_diff)


def _catalog_diff() -> Any:
    """The catalog classification `lock check` uses, when it is installed."""
    try:
        from gateway.lock.schema_diff import diff_catalogs
    except ImportError:
        return None
    return diff_catalogs


def print_report(report: DriftReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    summary = report.summary()
    console.print(f"[bold]drift of {report.cassette}[/]: {summary['calls']} recorded calls; "
                  f"{summary['identical']} identical, {summary['equal_after_ignore']} equal after ignore rules, "
                  f"[yellow]{summary['changed']} changed[/], [red]{summary['failing']} failing[/], {summary['skipped']} skipped "
                  f"(drift {100 * report.drift_share:.1f}%)")
    servers = Table("server", "state", "recorded", "live")
    for sid, info in report.servers.items():
        version = lambda i: f"{(i or {}).get('name', '')} {(i or {}).get('version', '')}".strip()  # noqa: E731
        state = info["state"] + (f" ({info['reason']})" if info["state"] != "ready" and info.get("reason") else "")
        servers.add_row(sid, state, version(info.get("recorded")), version(info.get("live")))
    console.print(servers)
    table = Table("server:tool", "identical", "equal after ignore", "changed", "failing", "skipped")
    for tool, counts in report.by_tool().items():
        table.add_row(tool, *(str(counts[v]) for v in ("identical", "equal_after_ignore", "changed", "failing", "skipped")))
    console.print(table)
    flips = [c for c in report.calls if any(d.path == "$.isError" for d in c.differences)]
    for call in flips + [c for c in report.calls if c.verdict in ("changed", "failing") and c not in flips]:
        console.print(f"[bold]{call.server}:{call.tool}[/] {json.dumps(call.arguments, default=str)[:100]} -> {call.verdict}")
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
