"""The lock file's commands: import server lists, install packages, lock and check catalogs.

    mcpgw lock import FILE [--lock L] [--profile P] [--base-dir D]
    mcpgw lock refresh [--config L] [--profile P] [--servers ID ...] [--timeout S]
    mcpgw lock check   [--config L] [--profile P] [--servers ID ...] [--timeout S] [--json]
    mcpgw servers install [--config L] [--profile P] [--servers ID ...] [--jobs N] [--timeout S] [--sources DIR]

A feature package on top of the core: it imports gateway/, and the core never
imports it. What the gateway itself needs to start a server lives in the core:
reading the lock (`gateway.config`, with `gateway.recipe_syntax`), where
installs and builds are and how an installed entry starts
(`gateway.installed`), and the breaking / compatible classification of
catalog changes (`gateway.schema_diff`, also used by `mcpgw drift`).

Modules, one concept each: `importer` (foreign server lists -> entries),
`lockedit` (text edits that keep comments), `launchers` (npx / uvx command
lines), `install` (cache warming and builds, concurrently), `direct` (finding
the command inside an installed npx / uvx environment), `sources` (a
repository at a commit: found, verified, extracted once), `recipes` (the
steps of each build recipe), `build` (one source build, verified by listing
its tools), `processes` (one install step's process), `probe` (start servers,
read catalogs), `locked` (the `locked:` section), `refresh` and `check`.
"""

from __future__ import annotations

import argparse
from typing import Any

DEFAULT_LOCK = "servers.lock.yaml"


def add_commands(sub: Any) -> None:
    """Register `lock ...` and `servers install` on the `mcpgw` subparsers.

    Call it after the `servers` (status) parser exists: `install` becomes a
    sub-command of it, and plain `mcpgw servers` keeps working."""
    lock = sub.add_parser("lock", help="import server lists into the lock file; lock and check tool catalogs")
    lock.set_defaults(func=lambda args: _usage(lock))
    actions = lock.add_subparsers(metavar="action")

    imp = actions.add_parser("import", help="append the servers of an mcpServers / VS Code / MCP-Bench file")
    imp.add_argument("file", help="Claude Desktop / Cursor mcpServers JSON, VS Code mcp.json, or MCP-Bench commands.json")
    imp.add_argument("--lock", default=DEFAULT_LOCK, help=f"lock file to add to, created if missing (default: {DEFAULT_LOCK})")
    imp.add_argument("--profile", help="also add the imported servers to this profile (created if missing)")
    imp.add_argument("--base-dir", help="MCP-Bench shape: where relative 'cwd's are anchored (default: the file's directory)")
    imp.set_defaults(func=_run("lock.importer", "cmd_import"))

    for name, help_text, module, function in (
        ("refresh", "start the servers and write what each offers under its 'locked:' key", "lock.refresh", "cmd_refresh"),
        ("check", "compare the live servers with their 'locked:' data; exit 1 on breaking drift", "lock.check", "cmd_check"),
    ):
        parser = actions.add_parser(name, help=help_text)
        _selection(parser)
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds each server has to start (default 120)")
        if name == "check":
            parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.set_defaults(func=_run(module, function))

    servers = sub.choices.get("servers") or sub.add_parser("servers", help="servers of the lock file")
    install_sub = servers.add_subparsers(metavar="action", required=False)
    install = install_sub.add_parser("install", help="fetch every npx/uvx package of a profile into its cache; build source entries")
    _selection(install)
    install.add_argument("--jobs", type=int, default=4, help="packages fetched at once (default 4)")
    install.add_argument("--timeout", type=float, default=600.0, help="seconds per package or build step (default 600)")
    install.add_argument("--sources", metavar="DIR", default=None,
                         help="folder(s) holding owner+repo@commit.tar.gz archives or directories, looked up "
                              "before any download (default: $MCPGW_SOURCES)")
    install.set_defaults(func=_run("lock.install", "cmd_install"))


def _selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None,
                        help=f"lock file (default: ./{DEFAULT_LOCK}; to read, else the one installed with mcpgw)")
    parser.add_argument("--profile", help="profile to use (default: the lock file's default_profile, else every server)")
    parser.add_argument("--servers", nargs="+", metavar="ID", help="only these server ids")


def _run(module: str, function: str) -> Any:
    """Import the command's module when it runs, so `mcpgw --help` stays fast."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        return int(getattr(importlib.import_module(module), function)(args))

    return run


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
