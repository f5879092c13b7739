"""`mcpgw`: the command line. Every failure a person can fix is one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import NoReturn

from mcpgw.cassette.store import CassetteFormatError
from mcpgw.commands import cassette, connect, drift, evaluate, lock, run, serve, status
from mcpgw.gateway import __version__
from mcpgw.gateway.errors.tree import GatewayError

# The order is the order of `mcpgw --help`; `lock` adds `servers install` under `status`'s `servers`.
REGISTRATIONS = (
    serve.register,
    status.register,
    cassette.register,
    lock.register,
    run.register,
    drift.register,
    connect.register,
    evaluate.register,
)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # --workers restarts the serve command in each worker
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpx2", "mcp", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except GatewayError as exc:
        print(f"mcpgw: {exc.message}", file=sys.stderr)
        return 2
    except CassetteFormatError as exc:  # a damaged or foreign cassette, found wherever it is read
        print(f"mcpgw: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


class Parser(argparse.ArgumentParser):
    """argparse with the CLI's one-line errors (`mcpgw: ...`) and a guess for a mistyped command.

    Subcommand parsers are made from this class too (add_subparsers reuses the parent's class).
    """

    def error(self, message: str) -> NoReturn:
        print(f"mcpgw: {_explain(self.prog, message)}", file=sys.stderr)
        sys.exit(2)


def _explain(prog: str, message: str) -> str:
    import difflib
    import re

    match = re.search(r"invalid choice: '?([^' ]*)'? \(choose from (.*)\)", message)
    if match is None:
        return f"{message} (see `{prog} --help`)"
    typed, choices = match.group(1), [c.strip(" '\"") for c in match.group(2).split(",")]
    option = re.match(r"argument (-[^:/ ]+)", message)
    if option is not None:  # an option's value, not a command or action
        return f"{option.group(1)} {typed!r}: choose from {', '.join(choices)}"
    what = "command" if prog == "mcpgw" else f"`{prog}` action"
    close = difflib.get_close_matches(typed, choices, n=2, cutoff=0.5)
    guess = f"; did you mean {' or '.join(close)}?" if close else f"; choose from {', '.join(choices)}"
    return f"unknown {what} {typed!r}{guess}"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="mcpgw", description="One MCP endpoint in front of many MCP servers.")
    parser.add_argument("--version", action="version", version=f"mcpgw {__version__}")
    sub = parser.add_subparsers(metavar="command")

    for register in REGISTRATIONS:
        register(sub)
    return parser


if __name__ == "__main__":
    sys.exit(main())
