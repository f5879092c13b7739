"""`mcpgw connect FORMAT`: write what a harness or MCP client reads to reach a running gateway."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcpgw.gateway.errors import GatewayError
from mcpgw.harness.configs import render


def cmd_connect(args: argparse.Namespace) -> int:
    from mcpgw.gateway.http_guard import load_token
    from mcpgw.gateway.status_client import fetch_status, gateway_base

    token = load_token(args.auth_token_env, args.auth_token_file)
    status = fetch_status(args.gateway, token)
    base = gateway_base(args.gateway)  # the files name endpoints under the base, not under a given .../mcp
    if args.servers:
        unknown = [s for s in args.servers if s not in status["servers"]]
        if unknown:
            import difflib

            near = {s: difflib.get_close_matches(s, list(status["servers"]), n=1) for s in unknown}
            hints = ", ".join(f"{s!r}" + (f" (did you mean {n[0]!r}?)" if n else "") for s, n in near.items())
            raise GatewayError(f"--servers: the gateway at {args.gateway} does not serve {hints}")
        status = {**status, "servers": {s: status["servers"][s] for s in args.servers}}
    text = render(args.format, status, base, run=args.run, per_server=args.per_server, token=token)
    if args.format == "mcprouter" and args.run:  # clients append paths to a base URL: a query would be lost
        print(f"mcpgw: tag the run with the header X-Run-Id: {args.run} on every call", file=sys.stderr)
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:  # a folder, a missing folder, a full disk: as `calls export -o` says it
            raise GatewayError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"mcpgw: wrote {args.output} ({len(status['servers'])} servers)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
