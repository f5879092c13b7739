"""`mcpgw drift`: re-issue a cassette's calls live and report what changed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mcpgw.cassette.paths import add_dir_option
from mcpgw.commands import DEFAULT_CONFIG as LOCK_FILE
from mcpgw.gateway.errors.tree import GatewayError


def register(sub: Any) -> None:
    drift = sub.add_parser("drift", help="re-issue a cassette's calls live and report what changed")
    drift.add_argument("--cassette", required=True, help="cassette name (in --cassettes-dir) or path")
    add_dir_option(drift)
    drift.add_argument(
        "--config",
        help=f"lock file whose entries (and ignore rules) to use; default: ./{LOCK_FILE} "
        "when present, else the entries recorded in the cassette",
    )
    drift.add_argument("--profile")
    drift.add_argument("--servers", nargs="+", action="extend")
    drift.add_argument("--include-unsafe", action="store_true", help="also re-issue destructive / unsafe tools")
    drift.add_argument("--learn", action="store_true", help="call each tool twice live and propose ignore rules")
    drift.add_argument(
        "--max-drift", type=float, default=0.0, help="largest share of changed/failing calls that exits 0"
    )
    drift.add_argument("--concurrency", type=int, default=4)
    drift.add_argument("--call-timeout", type=float, default=60.0)
    drift.add_argument("--json", action="store_true")
    drift.add_argument("-o", "--output", help="also write the full JSON report here")
    drift.set_defaults(func=cmd_drift)


def cmd_drift(args: argparse.Namespace) -> int:
    """Drift re-issues calls through the live upstreams `serve` would start (from the lock's installs), and
    classifies catalog changes as `lock check` does: both are handed to it here, so replay/ imports neither."""
    check_args(args)
    from mcpgw.commands.drift_cli import cmd_drift as run
    from mcpgw.gateway.specs.server_spec import ServerSpec
    from mcpgw.gateway.specs.settings import Settings
    from mcpgw.gateway.tools.schema_diff import diff_catalogs
    from mcpgw.gateway.upstreams.factory import live_upstream
    from mcpgw.gateway.upstreams.upstream import Upstream
    from mcpgw.lock.install_lookup import CacheInstalls

    installs = CacheInstalls()

    def make_upstream(spec: ServerSpec, settings: Settings) -> Upstream:
        return live_upstream(spec, settings, installs)

    return run(args, make_upstream=make_upstream, catalog_diff=diff_catalogs)


def check_args(args: argparse.Namespace) -> None:
    """Refuse what would hang, crash or fail only after the (long) run: checked before anything starts."""
    if args.concurrency < 1:  # 0 waits forever on the semaphore
        raise GatewayError(f"--concurrency must be at least 1, not {args.concurrency}")
    if not 0 <= args.max_drift <= 1:
        raise GatewayError(
            f"--max-drift is a share of the calls: give a fraction between 0 and 1, not {args.max_drift}"
        )
    if args.output:
        output = Path(args.output)
        if output.is_dir():
            raise GatewayError(f"cannot write {args.output}: it is a folder; give a file path for -o")
        if not output.parent.is_dir():
            raise GatewayError(f"cannot write {args.output}: no folder {output.parent}; create it or give another -o")
