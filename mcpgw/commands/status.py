"""`mcpgw servers` (a running gateway's status) and `mcpgw calls export` (a cassette's call log)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mcpgw.commands import DEFAULT_URL
from mcpgw.gateway.errors.tree import GatewayError


def register(sub: Any) -> None:
    servers = sub.add_parser("servers", help="status of each server of a running gateway")
    servers.add_argument("--url", default=DEFAULT_URL, help="the gateway's base URL")
    servers.add_argument("--json", action="store_true")
    servers.add_argument("--auth-token-env", metavar="VAR", help="bearer token for a gateway that requires one")
    servers.add_argument("--auth-token-file", metavar="FILE")
    servers.set_defaults(func=cmd_servers)

    calls = sub.add_parser("calls", help="the call log")
    calls_sub = calls.add_subparsers(metavar="action")
    export = calls_sub.add_parser("export", help="write a cassette's call log")
    export.add_argument("cassette", help="cassette name (in --cassettes-dir) or path")
    export.add_argument(
        "--format",
        choices=("jsonl", "otlp"),
        default="jsonl",
        help="jsonl: one record a line; otlp: the runs as OpenTelemetry traces sent to --to",
    )
    export.add_argument("--run", help="only this run id")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    export.add_argument(
        "--to",
        metavar="URL",
        help="--format otlp: the collector's OTLP/HTTP base URL "
        "(spans go to URL/v1/traces; e.g. Phoenix: http://127.0.0.1:6006)",
    )
    export.add_argument(
        "--trace-content", action="store_true", help="--format otlp: arguments and results on the spans"
    )
    export.set_defaults(func=cmd_calls_export)

    from mcpgw.cassette.paths import add_dir_option
    from mcpgw.recorder.replay_logs import add_log_option

    add_dir_option(export)
    add_log_option(export)


def cmd_servers(args: argparse.Namespace) -> int:
    from mcpgw.gateway.commandline.status_client import fetch_status
    from mcpgw.gateway.endpoints.http_guard import load_token

    status = fetch_status(args.url, load_token(args.auth_token_env, args.auth_token_file))
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print_status(status)
    return 0 if all(s["state"] == "ready" for s in status["servers"].values()) else 1


def print_status(status: dict[str, Any]) -> None:
    from rich.table import Table

    from mcpgw.gateway.commandline.console import table_console

    hidden = status.get("hidden_tools") or 0  # the servers list them; the lock's hide_tools keeps them from clients
    served = f"{status['tools']} tools" + (
        f" (+{hidden} the servers list and the lock hides: hide_tools)" if hidden else ""
    )
    table = Table(title=f"mcpgw: {served}, mode {status['mode']}, validate {status['validate']}")
    for column in ("server", "state", "tools", "restarts", "server info", "built from", "reason"):
        table.add_column(column)
    colours = {"ready": "green", "starting": "yellow", "restarting": "yellow", "unavailable": "red"}
    for name, info in sorted(status["servers"].items()):
        server_info = info.get("server_info") or {}
        table.add_row(
            name,
            f"[{colours.get(info['state'], 'white')}]{info['state']}[/]",
            str(info.get("exposed_tools", info.get("tools", 0)))
            + (f" (+{len(info['hidden_tools'])} hidden)" if info.get("hidden_tools") else ""),
            str(info.get("restarts", 0)),
            f"{server_info.get('name', '')} {server_info.get('version', '')}".strip(),
            info.get("built_from") or "",
            "; ".join(_notes(info)),
        )
    table_console().print(table)
    exposed = sorted(name for name, info in status["servers"].items() if info.get("all_interfaces"))
    if exposed:
        print(
            f"warning: {', '.join(exposed)}: listen(s) on all interfaces, not only loopback (the server's command has "
            "no option to bind one address): reachable from the network while the gateway runs it"
        )


def _notes(info: dict[str, Any]) -> list[str]:
    notes = [
        info.get("reason") or (f"started without {', '.join(info['missing_keys'])}" if info.get("missing_keys") else "")
    ]
    if info.get("all_interfaces"):
        notes.append("binds all interfaces")
    return [note for note in notes if note]


def cmd_calls_export(args: argparse.Namespace) -> int:
    from mcpgw.cassette.store import CassetteFormatError
    from mcpgw.recorder.calllog import export_jsonl
    from mcpgw.recorder.replay_logs import call_log_paths, log_note

    paths = call_log_paths(Path(args.cassettes_dir), args.cassette, args.log)
    if args.format == "otlp":
        return _export_otlp(args, paths)
    if args.to:
        raise GatewayError("--to is where --format otlp sends traces; jsonl goes to -o FILE or stdout")
    count = 0
    try:
        out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    except OSError as exc:
        raise GatewayError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    try:
        sources: dict[str, int] = {}
        for path in paths:
            count += export_jsonl(path, out, args.run, sources)
    except CassetteFormatError as exc:
        raise GatewayError(str(exc)) from None
    except BrokenPipeError:  # `| head`: the reader has all it wants
        return 0
    except OSError as exc:
        raise GatewayError(f"cannot write {args.output}: {exc}") from None
    finally:
        if args.output:
            out.close()
    print(f"exported {count} call record(s) from {', '.join(map(str, paths))}", file=sys.stderr)
    if sources:  # where the answers came from (replay.answer_sources): what a score over them rests on
        print(
            "answer sources: " + ", ".join(f"{n} {s}" for s, n in sorted(sources.items(), key=lambda i: -i[1])),
            file=sys.stderr,
        )
    note = log_note(paths[0], args.log, Path(args.cassettes_dir))
    if note:
        print(f"mcpgw: {note}", file=sys.stderr)
    return 0


def _export_otlp(args: argparse.Namespace, paths: list[Path]) -> int:
    from mcpgw.cassette.store import CassetteFormatError
    from mcpgw.telemetry.call_log_export import export_otlp

    if not args.to or not args.to.startswith(("http://", "https://")):
        raise GatewayError(
            "--format otlp needs --to URL: the collector's OTLP/HTTP base URL (e.g. http://127.0.0.1:6006)"
        )
    if args.output:
        raise GatewayError("--format otlp sends to --to; -o is for jsonl")
    try:
        count = export_otlp(paths, args.to, args.run, content=args.trace_content)
    except CassetteFormatError as exc:
        raise GatewayError(str(exc)) from None
    print(f"sent {count} call record(s) from {', '.join(map(str, paths))} as traces to {args.to}", file=sys.stderr)
    return 0
