"""`mcpgw cassette ls | show | export | merge | rm`: cassettes for people."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.on_disk import in_use
from mcpgw.cassette.paths import cassette_path, check_removable, existing_cassette, is_cassette
from mcpgw.cassette.store import CassetteFormatError
from mcpgw.gateway.commandline.console import table_console
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.recorder.replay_logs import fidelity, iter_records, prune, session_logs

CASSETTE_HELP = "cassette name (in --cassettes-dir) or path"
SHIPPED = "default"  # the cassette mcpgw ships and `mcpgw serve` replays


def _open(args: argparse.Namespace, name: str, *, create: bool = False, read_only: bool = True) -> Cassette:
    path = (
        cassette_path(Path(args.cassettes_dir), name, write=True)
        if create
        else existing_cassette(Path(args.cassettes_dir), name)
    )
    try:
        return Cassette(path, create=create, readonly=not create and read_only)
    except CassetteFormatError as exc:
        raise GatewayError(str(exc)) from None


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M") if ts else "-"


def summarize(cassette: Cassette) -> dict[str, Any]:
    info = cassette.info()
    tools: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    made_by: Counter[str] = Counter()  # an overlay's answers: live or simulated (replay.answer_sources)
    for _, entry in cassette.store.items("exchanges"):
        methods[entry["method"]] += 1
        if entry["method"] == "tools/call":
            tools[f"{entry['server']}:{(entry.get('params') or {}).get('name')}"] += 1
            made_by[entry.get("source") or "live"] += 1
    outcomes: Counter[str] = Counter()
    sources: Counter[str] = Counter()  # where each logged call's answer came from
    for _, record in cassette.store.items("calls"):
        outcomes[record.get("outcome")] += 1
        if record.get("source"):
            sources[record["source"]] += 1
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
                **_tool_counts(
                    catalogs.get(sid, {}).get("catalog", {}).get("tools") or [],
                    (info.get("servers", {}).get(sid) or {}).get("hide_tools") or (),
                ),
            }
            for sid in sorted(set(info.get("servers", {})) | set(catalogs))
        },
        "exchanges": sum(methods.values()),
        "exchanges_by_method": dict(methods),
        "tool_calls": dict(sorted(tools.items())),
        "calls": sum(outcomes.values()),
        "call_outcomes": dict(outcomes),
        "call_sources": dict(sources),
        "tool_answers_made_by": dict(made_by),
        "overlay_of": info.get("overlay_of"),
        "runs": [r for r in runs if r.get("kind") == "replay"],
        "last_drift": drift[-1] if drift else None,
        "bytes": size,
    }


def _tool_counts(listed: list[dict[str, Any]], hide: Any) -> dict[str, int]:
    """Tools served (what `mcpgw servers` counts) and those the server lists but the lock's hide_tools hides."""
    hidden = sum(1 for tool in listed if tool.get("name") in set(hide))
    return {"tools": len(listed) - hidden, "hidden_tools": hidden}


def replay_stats(cassettes_dir: Path, cassette: Path, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """Hit/miss totals of every replay of `cassette`, tool calls and model exchanges alike: the replay logs
    kept with it counted from their call records (`sessions`: `replay_fidelity` rows, so a session still
    running counts as the table below it does), and cassettes given as --log-cassette beside it from the
    run summaries their sessions left when they ended."""
    rows = [r for r in sessions if "error" not in r]
    hits: Counter[str] = Counter({"(kept logs)": sum(r["hits"] for r in rows)})
    misses: Counter[str] = Counter()
    kept_misses = sum(r["misses"] for r in rows)
    runs = len(rows)
    siblings = sorted(
        p.parent for p in Path(cassettes_dir).glob("*/data.mdb") if p.parent.resolve() != cassette.resolve()
    )
    for path in siblings:
        try:
            other = Cassette(path, create=False, readonly=True)
        except (CassetteFormatError, GatewayError):
            continue
        try:
            for run in other.runs():
                if run.get("kind") == "replay" and run.get("source") == cassette.name:
                    runs += 1
                    hits.update(run.get("hits", {}))
                    misses.update(run.get("misses", {}))
                    model = run.get("model") or {}  # the session's model exchanges, beside its tool calls
                    hits["@model"] += model.get("hits", 0)
                    misses["@model"] += model.get("misses", 0)
        except CassetteFormatError:
            continue  # another cassette's damage is not this one's concern (`ls` marks it)
        finally:
            other.close()
    return {
        "runs": runs,
        "hits": sum(hits.values()),
        "misses": sum(misses.values()) + kept_misses,
        "missed": {k: n for k, n in misses.most_common(10) if n},
    }


def replay_fidelity(cassette: Path, cassettes_dir: Path | None = None) -> list[dict[str, Any]]:
    """One row per replay/hybrid session of the cassette, oldest first, from its logs (`session_logs`); first,
    the cassette's own call records when it is itself a replay's log (`--log-cassette`)."""
    rows = []
    own = fidelity(cassette)
    replayed = any(run.get("kind") == "replay" for run in iter_records(cassette, "runs"))  # its session's summary
    if replayed or own["hits"] or own["misses"] or own["simulated"] or own["diverged_lanes"]:
        rows.append({**own, "log": "(this cassette: a --log-cassette log)"})
    for path in session_logs(cassette, cassettes_dir):
        try:
            rows.append(fidelity(path))
        except GatewayError as exc:
            rows.append({"log": path.name, "path": str(path), "error": exc.message})
    return rows


def cmd_ls(args: argparse.Namespace) -> int:
    from rich.table import Table

    table = Table(title=f"cassettes in {args.cassettes_dir}/ (replay logs indented under their cassette)")
    for column in ("name", "servers", "tools", "exchanges", "calls", "recorded", "size"):
        table.add_column(column)
    folder = Path(args.cassettes_dir)
    found = [p.parent for p in sorted(folder.glob("*/data.mdb"))]
    if (folder / SHIPPED / "runs").is_dir() and not is_cassette(folder / SHIPPED):  # logs of a bare serve here
        found.append(existing_cassette(folder, SHIPPED))
    for home in found:
        path = home / "data.mdb"
        try:
            cassette = Cassette(path.parent, create=False, readonly=True)
        except CassetteFormatError as exc:
            table.add_row(path.parent.name, f"[red]unreadable: {exc}[/]", "", "", "", "", "")
            continue
        try:
            s = summarize(cassette)
        except CassetteFormatError as exc:  # damaged pages: list the others, mark this one
            table.add_row(path.parent.name, f"[red]unreadable: {exc}[/]", "", "", "", "", "")
            continue
        finally:
            cassette.close()
        name = s["name"] if home.resolve().parent == folder.resolve() else f"{s['name']} (installed: {home})"
        hidden = sum(v["hidden_tools"] for v in s["servers"].values())
        table.add_row(
            name,
            str(len(s["servers"])),
            str(sum(v["tools"] for v in s["servers"].values())) + (f" (+{hidden} hidden)" if hidden else ""),
            str(s["exchanges"]),
            str(s["calls"]),
            _when(s["recorded_at"]),
            _kib(s["bytes"]),
        )
        logs = session_logs(path.parent, folder)
        if len(logs) > args.runs:
            table.add_row(f"  ... {len(logs) - args.runs} older replay log(s)", "", "", "", "", "", "")
        for log in logs[max(0, len(logs) - args.runs) :] if args.runs > 0 else []:
            try:
                row = fidelity(log)
            except GatewayError:
                table.add_row(f"  runs/{log.name}", "[red]unreadable[/]", "", "", "", "", "")
                continue
            table.add_row(
                f"  runs/{log.name}",
                "",
                "",
                "",
                f"{row['calls']} ({_fidelity_text(row)})",
                _when(row["started"]),
                _kib(_folder_bytes(log)),
            )
    table_console().print(table)
    return 0


def _fidelity_text(row: dict[str, Any]) -> str:
    return f"{row['hits']} hit, {row['misses']} miss, {row['diverged_lanes']} diverged lane(s), {row['live']} live"


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _overlay_line(base: Any, made_by: dict[str, int]) -> str:
    """What an overlay holds: "an overlay over cassette 'A', holding 3 tool answers (2 simulated, 1 live)"."""
    total = sum(made_by.values())
    if not total:
        return f"an overlay over cassette {base!r}, holding no tool answers yet"
    return (
        f"an overlay over cassette {base!r}, holding {total} tool answer{'s' if total != 1 else ''} "
        f"({_counted(made_by)})"
    )


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.glob("*.mdb"))


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB"


def cmd_show(args: argparse.Namespace) -> int:
    cassette = _open(args, args.name)
    try:
        summary = summarize(cassette)
    finally:
        cassette.close()
    summary["replays"] = replay_fidelity(Path(summary["path"]), Path(args.cassettes_dir))
    summary["replay"] = replay_stats(Path(args.cassettes_dir), Path(summary["path"]), summary["replays"])
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    from rich.table import Table

    console = table_console()
    console.print(
        f"[bold]{summary['name']}[/] ({summary['path']}): recorded {_when(summary['recorded_at'])}, "
        f"{summary['exchanges']} exchanges, {summary['calls']} call records, {_kib(summary['bytes'])}"
    )
    if summary["overlay_of"]:
        console.print(_overlay_line(summary["overlay_of"].get("name"), summary["tool_answers_made_by"]))
    if summary["call_sources"]:
        console.print(f"answer sources of its call records: {_counted(summary['call_sources'])}")
    drift = summary["last_drift"]
    console.print(
        f"freshness: last drift check {_when(drift.get('ended')) if drift else 'never'}"
        + (f", {drift.get('changed', 0)} changed / {drift.get('calls', 0)} calls" if drift else "")
    )
    replay = summary["replay"]
    console.print(
        f"replay sessions: {replay['runs']}, hits {replay['hits']}, misses {replay['misses']} "
        "(tool calls and model exchanges)" + (f" (most missed: {replay['missed']})" if replay["missed"] else "")
    )
    replays = summary["replays"]
    console.print(
        f"replay logs kept with the cassette: {len(replays)}"
        + (" (read one: mcpgw calls export NAME --log last|STAMP)" if replays else "")
    )
    if replays:
        fidelity_table = Table("replay log", "mode", "calls", "hits", "misses", "diverged lanes", "live", "simulated")
        for row in replays:
            if "error" in row:
                fidelity_table.add_row(row["log"], f"[red]{row['error']}[/]", "", "", "", "", "", "")
                continue
            fidelity_table.add_row(
                row["log"],
                row["mode"],
                *(str(row[k]) for k in ("calls", "hits", "misses", "diverged_lanes", "live", "simulated")),
            )
        console.print(fidelity_table)
    servers = Table("server", "server info", "tools served")
    for sid, s in summary["servers"].items():
        si = s["server_info"] or {}
        servers.add_row(
            sid,
            f"{si.get('name', '')} {si.get('version', '')}",
            str(s["tools"]) + (f" (+{s['hidden_tools']} hidden)" if s["hidden_tools"] else ""),
        )
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

    target_path = cassette_path(Path(args.cassettes_dir), args.output, write=True)
    if target_path.exists():
        raise GatewayError(f"{target_path} exists; merge writes a new cassette")
    first = _open(args, args.a)
    sources = (
        [first, first]
        if cassette_path(Path(args.cassettes_dir), args.b).resolve() == first.path.resolve()
        else [first, _open(args, args.b)]
    )
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
    path = existing_cassette(Path(args.cassettes_dir), args.name)
    if path.resolve() == (Path(args.cassettes_dir) / SHIPPED).resolve() and not args.force:
        raise GatewayError(
            f"{path} is the cassette mcpgw ships and `mcpgw serve` replays; "
            f"remove it anyway with: mcpgw cassette rm {args.name} --force"
        )
    check_removable(Path(args.cassettes_dir), path, named_by_path="/" in args.name or args.name.startswith("."))
    busy = [p for p in (path, *sorted((path / "runs").glob("*"))) if in_use(p)]
    if busy:  # its files would go while a gateway still writes (and "commits") into them
        raise GatewayError(
            f"{busy[0]} is open in a running gateway (or another mcpgw command): stop it, then remove {args.name}"
        )
    shutil.rmtree(path)
    print(f"removed {path}", file=sys.stderr)
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    if args.keep is None and args.older_than is None:
        raise GatewayError("cassette prune: say what to remove with --keep N and/or --older-than AGE (e.g. 7d)")
    if args.keep is not None and args.keep < 0:
        raise GatewayError("--keep must be 0 or more")
    older = parse_age(args.older_than) if args.older_than else None
    folder = Path(args.cassettes_dir)
    paths = [existing_cassette(folder, n) for n in args.names] or sorted(p for p in folder.glob("*") if is_cassette(p))
    if not args.names and (folder / SHIPPED / "runs").is_dir() and not is_cassette(folder / SHIPPED):
        paths.append(existing_cassette(folder, SHIPPED))  # the logs of a bare serve here, as `cassette ls` lists them
    removed = 0
    for path in paths:
        pruned = prune(path, keep=args.keep, older_than=older, dry_run=args.dry_run, cassettes_dir=folder)
        for log in pruned.removed:
            print(f"{'would remove' if args.dry_run else 'removed'} {log}", file=sys.stderr)
            removed += 1
        for log in pruned.in_use:
            print(f"kept {log}: a running gateway is writing it", file=sys.stderr)
    print(
        f"{removed} replay log(s) {'would be ' if args.dry_run else ''}removed from {len(paths)} cassette(s)",
        file=sys.stderr,
    )
    return 0


def parse_age(text: str) -> float:
    """`30m`, `12h`, `7d`, `90s` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    number, unit = text[:-1], text[-1:].lower()
    try:
        value = float(number)
    except ValueError:
        value = -1
    if unit not in units or value < 0:
        raise GatewayError(f"--older-than {text!r}: use a number and a unit, e.g. 90s, 30m, 12h, 7d, 2w")
    return value * units[unit]
