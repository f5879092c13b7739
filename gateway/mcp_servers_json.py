"""The `mcpServers` JSON shapes (Claude Desktop, Cursor, VS Code's mcp.json and settings.json) read
as a config: one stdio / http / sse server per entry, ids made from the display names.
"""

from __future__ import annotations

import re

from mcpgw.gateway.config_fields import LineMapping
from mcpgw.gateway.errors import ConfigError
from mcpgw.gateway.lock_format import check_transport, launch_fields
from mcpgw.gateway.server_spec import DEFAULT_SEPARATOR, TRANSPORTS, GatewayConfig, ServerSpec


def from_mcp_servers(doc: LineMapping, source: str) -> GatewayConfig:
    raw = doc.get("mcpServers", doc.get("servers"))
    if raw is None and "mcp" in doc and isinstance(doc["mcp"], LineMapping):  # VS Code settings.json
        raw = doc["mcp"].get("servers")
    if not isinstance(raw, LineMapping) or not raw:
        raise ConfigError(source, doc.line, "expected a non-empty 'mcpServers' mapping of name -> server")
    servers: dict[str, ServerSpec] = {}
    for name, entry in raw.items():
        line = raw.key_lines.get(str(name), raw.line)
        sid = server_id_from_name(str(name))
        if sid in servers:
            raise ConfigError(source, line, f"server {name!r} maps to id {sid!r}, which an earlier entry already uses")
        where = f"server {name!r}"
        if not isinstance(entry, LineMapping):
            raise ConfigError(source, line, f"{where}: expected a mapping")
        if "command" not in entry and "url" not in entry:
            raise ConfigError(source, line, f"{where}: needs a 'command' (stdio) or a 'url' (http, sse)")
        kind = entry.get("type") or entry.get("transport") or ("stdio" if "command" in entry else "http")
        kind = {"streamable-http": "http", "streamableHttp": "http", "streamable_http": "http"}.get(kind, kind)
        if kind not in TRANSPORTS:
            raise ConfigError(source, line, f"{where}: unknown type {kind!r}; expected stdio, http or sse")
        spec = ServerSpec(
            **launch_fields(entry, source, where),
            id=sid,
            transport=kind,
            title=str(name) if sid != name else None,
            line=line,
        )
        check_transport(spec, source, where)
        servers[sid] = spec
    return GatewayConfig(source, servers, {}, None, DEFAULT_SEPARATOR)


def server_id_from_name(name: str) -> str:
    """A lock id from a display name: 'Unit Converter' -> 'unit_converter'."""
    sid = re.sub(r"[^A-Za-z0-9-]+", "_", name).strip("_-").lower()
    sid = re.sub(r"_+", "_", sid)[:40]
    return sid or "server"
