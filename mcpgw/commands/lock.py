"""`mcpgw lock import|refresh|check` and `mcpgw servers install` (the lock feature, lock/)."""

from __future__ import annotations

import argparse
from typing import Any

from mcpgw.commands import DEFAULT_CONFIG as DEFAULT_LOCK
from mcpgw.commands import lazy, usage


def register(sub: Any) -> None:
    """Register `lock ...` and `servers install` on the `mcpgw` subparsers.

    Call it after the `servers` (status) parser exists: `install` becomes a
    sub-command of it, and plain `mcpgw servers` keeps working."""
    lock = sub.add_parser("lock", help="import server lists into the lock file; lock and check tool catalogs")
    lock.set_defaults(func=usage(lock))
    actions = lock.add_subparsers(metavar="action")

    imp = actions.add_parser("import", help="append the servers of an mcpServers / VS Code / MCP-Bench file")
    imp.add_argument(
        "file", help="Claude Desktop / Cursor mcpServers JSON, VS Code mcp.json, or MCP-Bench commands.json"
    )
    imp.add_argument(
        "--lock", default=DEFAULT_LOCK, help=f"lock file to add to, created if missing (default: {DEFAULT_LOCK})"
    )
    imp.add_argument("--profile", help="also add the imported servers to this profile (created if missing)")
    imp.add_argument(
        "--base-dir", help="MCP-Bench shape: where relative 'cwd's are anchored (default: the file's directory)"
    )
    imp.set_defaults(func=lazy("mcpgw.lock.importer", "cmd_import"))

    for name, help_text, module, function in (
        (
            "refresh",
            "start the servers and write what each offers under its 'locked:' key",
            "mcpgw.lock.refresh",
            "cmd_refresh",
        ),
        (
            "check",
            "compare the live servers with their 'locked:' data; exit 1 on breaking drift",
            "mcpgw.lock.check",
            "cmd_check",
        ),
    ):
        parser = actions.add_parser(name, help=help_text)
        _selection(parser)
        parser.add_argument(
            "--timeout", type=_seconds, default=120.0, help="seconds each server has to start (default 120)"
        )
        if name == "check":
            parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.set_defaults(func=lazy(module, function))

    servers = sub.choices.get("servers") or sub.add_parser("servers", help="servers of the lock file")
    install_sub = servers.add_subparsers(metavar="action", required=False)
    install = install_sub.add_parser(
        "install", help="fetch every npx/uvx package of a profile into its cache; build source entries"
    )
    _selection(install)
    install.add_argument("--jobs", type=int, default=4, help="packages fetched at once (default 4)")
    install.add_argument(
        "--timeout", type=_seconds, default=600.0, help="seconds per package or build step (default 600)"
    )
    install.add_argument(
        "--sources",
        metavar="DIR",
        default=None,
        help="folder(s) holding owner+repo@commit.tar.gz archives or directories, looked up "
        "before any download (default: $MCPGW_SOURCES)",
    )
    install.set_defaults(func=lazy("mcpgw.lock.installer", "cmd_install"))


def _seconds(text: str) -> float:
    """A time limit: a positive number of seconds (0 or less reported every server 'not ready within -5s')."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive number of seconds")
    return value


def _selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        help=f"lock file (default: ./{DEFAULT_LOCK}; to read, else the one installed with mcpgw)",
    )
    parser.add_argument(
        "--profile", help="profile to use (default: the lock file's default_profile, else every server)"
    )
    parser.add_argument("--servers", nargs="+", action="extend", metavar="ID", help="only these server ids")
