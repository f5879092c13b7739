"""The files harnesses and MCP clients read to reach the gateway, from what a running gateway serves.

- `mcpbench`: MCP-Bench's `mcp_servers/commands.json`. Each server is an HTTP entry under MCP-Bench's
  name for it (the lock's `title:`) pointing at its per-server endpoint, with a `cmd` that holds the
  place of the process the runner starts (`harness.hold`, by the absolute path of this interpreter, so
  it runs with PATH stripped) and `cwd` "." (the runner joins `../x` onto its own mcp_servers/).
- `mcpservers`: Claude Desktop / Cursor style `{"mcpServers": {...}}`; `vscode`: VS Code's
  `{"servers": {..., "type": "http"}}`. One entry for /mcp, or with `--per-server` one per server.
- `mcprouter`: the base URL of the mcprouter-style API, one line (with a run: `/runs/<id>/v1`, tagged).

A gateway token is not written into the files: VS Code's file asks for it once (an `inputs` entry,
`promptString` with `password`, referenced as `${input:mcpgw-token}`), an mcpServers file names the
variable it is in (`${env:VAR}`, which Cursor expands); `token_ref` is what follows "Bearer ".
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote, urlencode

FORMATS = ("mcpbench", "mcpservers", "vscode", "mcprouter")


def endpoint(server: str, run: str | None) -> str:
    path = f"/servers/{quote(server, safe='')}/mcp"
    return f"{path}?{urlencode({'run': run})}" if run else path


def mcpbench_commands(status: dict[str, Any], base: str, run: str | None) -> dict[str, Any]:
    port = _port(base)
    hold = f"{sys.executable} -I -m mcpgw.harness.hold"  # -I: a harness folder of the cwd is not imported
    out: dict[str, Any] = {}
    for sid, info in sorted(status["servers"].items()):
        name = info.get("title") or sid
        out[name] = {
            "cmd": hold,
            "env": [],
            "cwd": ".",
            "transport": "http",
            "port": port,
            "endpoint": endpoint(sid, run),
        }
    return out


TOKEN_INPUT = "mcpgw-token"


def mcp_servers(
    status: dict[str, Any], base: str, run: str | None, per_server: bool, vscode: bool, token_ref: str | None
) -> dict[str, Any]:
    base = base.rstrip("/")
    headers = {"Authorization": f"Bearer {token_ref}"} if token_ref else None
    entries: dict[str, str] = {"mcpgw": base + "/mcp" + (f"?{urlencode({'run': run})}" if run else "")}
    if per_server:
        entries = {sid: base + endpoint(sid, run) for sid in sorted(status["servers"])}
    servers = {}
    for name, url in entries.items():
        entry: dict[str, Any] = {"type": "http", "url": url} if vscode else {"url": url}
        if headers:
            entry["headers"] = headers
        servers[name] = entry
    if not vscode:
        return {"mcpServers": servers}
    if token_ref == "${input:%s}" % TOKEN_INPUT:  # VS Code prompts for it once and keeps it in its secret storage
        return {
            "inputs": [
                {"type": "promptString", "id": TOKEN_INPUT, "description": "mcpgw gateway token", "password": True}
            ],
            "servers": servers,
        }
    return {"servers": servers}


def token_ref(kind: str, token_env: str | None, literal: str | None) -> str:
    """What a client file puts after "Bearer ": the literal token only when asked for (`literal`)."""
    if literal is not None:
        return literal
    if kind == "vscode":
        return "${input:%s}" % TOKEN_INPUT
    return "${env:%s}" % (token_env or "MCPGW_TOKEN")


def render(
    kind: str,
    status: dict[str, Any],
    base: str,
    *,
    run: str | None = None,
    per_server: bool = False,
    token_ref: str | None = None,
) -> str:
    if kind == "mcpbench":
        return json.dumps(mcpbench_commands(status, base, run), indent=2) + "\n"
    if kind == "mcprouter":  # a run in the path: clients append their own paths, so a query would be lost
        return run_base(base, run) + "/v1\n"
    return json.dumps(mcp_servers(status, base, run, per_server, kind == "vscode", token_ref), indent=2) + "\n"


def run_base(base: str, run: str | None) -> str:
    """The base URL whose every route is tagged with `run` (gateway.sessions.run_paths), or the base itself."""
    base = base.rstrip("/")
    return f"{base}/runs/{quote(run, safe='')}" if run else base


def model_bases(base: str, run: str | None) -> str:
    """Where a harness's model client goes, tagged like its tool calls: one line each for OpenAI-style clients
    (`base_url`) and Azure ones (`azure_endpoint`)."""
    tagged = run_base(base, run)
    return (
        f"model (OpenAI base_url): {tagged}/v1\n"
        f"model (AzureOpenAI azure_endpoint, e.g. MCP-Bench's AZURE_OPENAI_ENDPOINT): {tagged}"
    )


def _port(base: str) -> int:
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    return parts.port or (443 if parts.scheme == "https" else 80)
