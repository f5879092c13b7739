"""`mcpgw connect FORMAT`: write what a harness or MCP client reads to reach a running gateway."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.harness.configs import model_bases, render, token_ref


def cmd_connect(args: argparse.Namespace) -> int:
    from mcpgw.gateway.commandline.status_client import fetch_status, gateway_base
    from mcpgw.gateway.endpoints.http_guard import load_token

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
    ref = None
    if token and args.format in ("mcpservers", "vscode"):
        ref = token_ref(args.format, args.auth_token_env, token if args.token_in_file else None)
    if token and args.format == "mcpbench":
        print(
            "mcpgw: WARNING: this gateway wants a bearer token, and MCP-Bench's runner cannot send one (its HTTP "
            "client sends no headers): every call it makes will be refused (401). Serve it from a gateway on "
            "loopback without --auth-token-env/--auth-token-file.",
            file=sys.stderr,
        )
    text = render(args.format, status, base, run=args.run, per_server=args.per_server, token_ref=ref)
    if args.run:  # the model side, tagged with the same run (a base URL's path survives what clients append)
        for line in model_bases(base, args.run).splitlines():
            print(f"mcpgw: {line}", file=sys.stderr)
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:  # a folder, a missing folder, a full disk: as `calls export -o` says it
            raise GatewayError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"mcpgw: wrote {args.output} ({len(status['servers'])} servers)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if ref is not None:  # once written: a file that could not be written holds nothing
        _say_where_the_token_is(args, ref)
    return 0


def _say_where_the_token_is(args: argparse.Namespace, ref: str) -> None:
    if args.token_in_file:
        where = args.output or "the output"
        print(
            f"mcpgw: WARNING: {where} holds the gateway's bearer token in plain text (--token-in-file): keep it out "
            "of version control and shared folders, and readable by you alone.",
            file=sys.stderr,
        )
    elif args.format == "vscode":
        print(
            f"mcpgw: the token is not in the file: VS Code asks for it once ({ref}, a password input) and keeps it "
            "in its secret storage.",
            file=sys.stderr,
        )
    else:
        variable = ref[len("${env:") : -1]
        print(
            f"mcpgw: the token is not in the file: its headers say {ref}, which the client expands (Cursor does; "
            f"set {variable} in its environment). A client that does not expand it needs --token-in-file.",
            file=sys.stderr,
        )
