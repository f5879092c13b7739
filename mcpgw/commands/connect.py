"""`mcpgw connect FORMAT`: a harness's or client's config for a running gateway."""

from __future__ import annotations

from typing import Any

from mcpgw.commands import DEFAULT_URL, lazy
from mcpgw.harness.configs import FORMATS


def register(sub: Any) -> None:
    default_url = DEFAULT_URL
    connect = sub.add_parser(
        "connect",
        help="write a harness's or client's config for a running gateway",
        description="mcpbench: MCP-Bench's mcp_servers/commands.json (each server an HTTP entry at its "
        "per-server endpoint); mcpservers / vscode: an MCP client's server list (one entry for /mcp, "
        "or --per-server); mcprouter: the base URL of the mcprouter-style API.",
    )
    connect.add_argument("format", choices=FORMATS)
    connect.add_argument("--gateway", default=default_url, help=f"the gateway's base URL (default {default_url})")
    connect.add_argument(
        "--servers", nargs="+", action="extend", metavar="ID", help="only these servers (default: all it serves)"
    )
    connect.add_argument("--run", help="a run id put in every URL (?run=): the harness's calls share one lane")
    connect.add_argument("--per-server", action="store_true", help="mcpservers/vscode: one entry per server")
    connect.add_argument("--auth-token-env", metavar="VAR", help="the gateway's bearer token, from this variable")
    connect.add_argument("--auth-token-file", metavar="FILE")
    connect.add_argument(
        "--token-in-file",
        action="store_true",
        help="mcpservers/vscode: write the token itself into the file (default: a reference to it, "
        "${input:...} for VS Code, ${env:VAR} for mcpServers)",
    )
    connect.add_argument("-o", "--output", help="file to write (default: stdout)")
    connect.set_defaults(func=lazy("mcpgw.harness.cli", "cmd_connect"))
