"""`mcpgw cassette ls | show | export | merge | rm`: cassettes for people."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from recorder.cassette import Cassette
from recorder.paths import cassette_path
from recorder.store import CassetteFormatError


def add_commands(sub: Any) -> None:
    cassette = sub.add_parser("cassette", help="list, inspect, export, merge and remove cassettes")
    cassette.add_argument("--cassettes-dir", default="cassettes")
    actions = cassette.add_subparsers(metavar="action")
    ls = actions.add_parser("ls", help="every cassette, with counts")
    ls.set_defaults(func=cmd_ls)
    show = actions.add_parser("show", help="one cassette: servers, tools, calls, replay statistics, freshness")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show)
    export = actions.add_parser("export", help="catalogs, exchanges and calls as JSONL")
    export.add_argument("name")
    export.add_argument("--format", choices=("jsonl",), default="jsonl")
    export.add_argument("-o", "--output")
    export.set_defaults(func=cmd_export)
    merge = actions.add_parser("merge", help="merge two cassettes into a new one (b's recordings after a's)")
    merge.add_argument("a")
    merge.add_argument("b")
    merge.add_argument("-o", "--output", required=True)
    merge.set_defaults(func=cmd_merge)
    rm = actions.add_parser("rm", help="remove a cassette")
    rm.add_argument("name")
    rm.set_defaults(func=cmd_rm)
    cassette.set_defaults(func=lambda args: cassette.print_help() or 2)


def _open(args: argparse.Namespace, name: str, *, create: bool = False, read_only: bool = True) -> Cassette:
    path = cassette_path(Path(args.cassettes_dir), name)
    if not create and not (path / "data.mdb").exists():
        raise GatewayError(f"no cassette {name!r} in {args.cassettes_dir}/")
    try:
        return Cassette(path, create=create, readonly=not create and read_only)
    except CassetteFormatError as exc:
        raise GatewayError(str(exc)) from None


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M") if ts else "-"


def summarize(cassette: Cassette) -> dict[str, Any]:
    info = cassette.info()
    tools: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    for _, entry in cassette.store.items("exchanges"):
        methods[entry["method"]] += 1
        if entry["method"] == "tools/call":
            tools[f"{entry['server']}:{(entry.get('params') or {}).get('name')}"] += 1
    outcomes: Counter[str] = Counter(r.get("outcome") for _, r in cassette.store.items("calls"))
    catalogs = {k.decode(): v for k, v in cassette.store.items("catalog")}
    recorded = [c["provenance"].get("recorded_at") for c in catalogs.values() if c.get("provenance")]
    size = sum(p.stat().st_size for p in cassette.path.glob("*.mdb"))
    runs = cassette.runs()
    drift = [r for r in runs if r.get("kind") == "drift"]
    return {
        "name": cassette.path.name,
        "path": str(cassette.path),
        "created": info.get("created"),
        "recorded_at": max(recorded) if recorded else None,
        "servers": {
            sid: {
                "server_info": (catalogs.get(sid, {}).get("catalog", {}).get("init") or {}).get("serverInfo"),
                "tools": len(catalogs.get(sid, {}).get("catalog", {}).get("tools") or []),
            }
            for sid in sorted(set(info.get("servers", {})) | set(catalogs))
        },
        "exchanges": sum(methods.values()),
        "exchanges_by_method": dict(methods),
        "tool_calls": dict(sorted(tools.items())),
        "calls": sum(outcomes.values()),
        "call_outcomes": dict(outcomes),
        "runs": [r for r in runs if r.get("kind") == "replay"],
        "last_drift": drift[-1] if drift else None,
        "bytes": size,
    }


def replay_stats(cassettes_dir: Path, name: str) -> dict[str, Any]:
    """Hit/miss totals of the replay runs of `name`, read from the call-log cassettes beside it."""
    hits: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    runs = 0
    for path in sorted(cassettes_dir.glob("*/data.mdb")):
        try:
            other = Cassette(path.parent, create=False, readonly=True)
        except (CassetteFormatError, GatewayError):
            continue
        try:
            for run in other.runs():
                if run.get("kind") == "replay" and run.get("source") == name:
                    runs += 1
                    hits.update(run.get("hits", {}))
                    misses.update(run.get("misses", {}))
        finally:
            other.close()
    return {"runs": runs, "hits": sum(hits.values()), "misses": sum(misses.values()), "missed": dict(misses.most_common(10))}


def cmd_ls(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cassettes in {args.cassettes_dir}/")
    for column in ("name", "servers", "tools", "exchanges", "calls", "recorded", "size"):
        table.add_column(column)
    for path in sorted(Path(args.cassettes_dir).glob("*/data.mdb")):
        try:
            cassette = Cassette(path.parent, create=False, readonly=True)
        except CassetteFormatError as exc:
            table.add_row(path.parent.name, f"[red]unreadable: {exc}[/]", "", "", "", "", "")
            continue
        try:
            s = summarize(cassette)
        finally:
            cassette.close()
        table.add_row(s["name"], str(len(s["servers"])), str(sum(v["tools"] for v in s["servers"].values())),
                      str(s["exchanges"]), str(s["calls"]), _when(s["recorded_at"]), f"{s['bytes'] / 1024:.0f} KiB")
    Console().print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    cassette = _open(args, args.name)
    try:
        summary = summarize(cassette)
    finally:
        cassette.close()
    summary["replay"] = replay_stats(Path(args.cassettes_dir), summary["name"])
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{summary['name']}[/] ({summary['path']}): recorded {_when(summary['recorded_at'])}, "
                  f"{summary['exchanges']} exchanges, {summary['calls']} call records, {summary['bytes'] / 1024:.0f} KiB")
    drift = summary["last_drift"]
    console.print(f"freshness: last drift check {_when(drift.get('ended')) if drift else 'never'}"
                  + (f", {drift.get('changed', 0)} changed / {drift.get('calls', 0)} calls" if drift else ""))
    replay = summary["replay"]
    console.print(f"replay runs: {replay['runs']}, hits {replay['hits']}, misses {replay['misses']}"
                  + (f" (most missed: {replay['missed']})" if replay["missed"] else ""))
    servers = Table("server", "server info", "tools in catalog")
    for sid, s in summary["servers"].items():
        si = s["server_info"] or {}
        servers.add_row(sid, f"{si.get('name', '')} {si.get('version', '')}", str(s["tools"]))
    console.print(servers)
    tools = Table("server:tool", "recorded calls")
    for tool, n in summary["tool_calls"].items():
        tools.add_row(tool, str(n))
    console.print(tools)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    cassette = _open(args, args.name)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    count = 0
    try:
        for db, kind in (("catalog", "catalog"), ("exchanges", "exchange"), ("calls", "call")):
            for key, value in cassette.store.items(db):
                line = {"type": kind, **({"server": key.decode()} if db == "catalog" else {}), **value}
                out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
                count += 1
    except BrokenPipeError:
        return 0
    finally:
        cassette.close()
        if args.output:
            out.close()
    print(f"exported {count} record(s)", file=sys.stderr)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    target_path = cassette_path(Path(args.cassettes_dir), args.output)
    if target_path.exists():
        raise GatewayError(f"{target_path} exists; merge writes a new cassette")
    first = _open(args, args.a)
    sources = [first, first] if cassette_path(Path(args.cassettes_dir), args.b).resolve() == first.path.resolve() else [first, _open(args, args.b)]
    target = _open(args, args.output, create=True)
    try:
        total = sum(c.store.count("exchanges") + c.store.count("calls") for c in sources)
        servers: dict[str, Any] = {}
        with Progress(transient=True) as progress:
            task = progress.add_task("merging", total=total)
            for source in sources:
                servers.update(source.info().get("servers", {}))
                for key, value in source.store.items("catalog"):
                    if target.store.get("catalog", key) is None:
                        target.store.put("catalog", key, value)
                for db in ("exchanges", "calls"):
                    for _, value in source.store.items(db):
                        target.store.append(db, value)
                        progress.advance(task, 1)
        target.write_info(servers)
    finally:
        for cassette in {id(c): c for c in (*sources, target)}.values():
            cassette.close()
    print(f"merged {args.a} + {args.b} -> {target_path}", file=sys.stderr)
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    path = cassette_path(Path(args.cassettes_dir), args.name)
    if not (path / "data.mdb").exists():
        raise GatewayError(f"no cassette {args.name!r} in {args.cassettes_dir}/")
    shutil.rmtree(path)
    print(f"removed {path}", file=sys.stderr)
    return 0
