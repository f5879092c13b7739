"""The `mcpServers` JSON shapes (Claude Desktop, Cursor, VS Code's mcp.json and settings.json) read
as a config: one stdio / http / sse server per entry, ids made from the display names.

An entry may also carry the lock's per-server fields (`flags`, `state_group`, `timeout`, ...), in an
`x-mcpgw` object (which other clients ignore) or at the entry's top level. A key neither we nor the
common clients know is warned about, naming file, server and key: it would otherwise change nothing
without a word (a `"flag": ["stateless"]` typo).
"""

from __future__ import annotations

import logging
import re

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.specs.server_spec import DEFAULT_SEPARATOR, TRANSPORTS, GatewayConfig, ServerSpec
from mcpgw.lock.config_fields import LineMapping, check_keys, line_of
from mcpgw.lock.lock_format import LOCK_FIELDS, check_transport, launch_fields, lock_fields


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
        fields = lock_fields(_lock_part(entry, source, where), source, where)
        fields["title"] = fields["title"] or (str(name) if sid != name else None)
        spec = ServerSpec(**launch_fields(entry, source, where), **fields, id=sid, transport=kind, line=line)
        check_transport(spec, source, where)
        servers[sid] = spec
    return GatewayConfig(source, servers, {}, None, DEFAULT_SEPARATOR)


logger = logging.getLogger(__name__)

EXTENSION_KEY = "x-mcpgw"
_LAUNCH_KEYS = {"command", "args", "env", "cwd", "url", "headers", "type", "transport"}
# What other clients put in these files (Cline, Roo, Cursor, VS Code, Claude Desktop): not ours, not warned about.
_OTHER_CLIENTS_KEYS = {
    "disabled",
    "autoApprove",
    "alwaysAllow",
    "envFile",
    "description",
    "name",
    "gallery",
    "version",
    "oauth",
    "networkTimeout",
    "trust",
    "includeTools",
    "excludeTools",
    "dev",
}


def _lock_part(entry: LineMapping, source: str, where: str) -> LineMapping:
    """The lock fields of one entry: its `x-mcpgw` object merged with the same names at its top level."""
    for key in entry:
        if key not in _LAUNCH_KEYS | LOCK_FIELDS | _OTHER_CLIENTS_KEYS | {EXTENSION_KEY}:
            logger.warning(
                "%s:%d: %s: unknown key %r ignored (lock fields go in %r or at the entry's top level: %s)",
                source,
                line_of(entry, str(key)),
                where,
                key,
                EXTENSION_KEY,
                ", ".join(sorted(LOCK_FIELDS)),
            )
    part = LineMapping({k: v for k, v in entry.items() if k in LOCK_FIELDS})
    part.line, part.key_lines = entry.line, {k: line_of(entry, k) for k in part}
    extension = entry.get(EXTENSION_KEY)
    if extension is None:
        return part
    if not isinstance(extension, LineMapping):
        raise ConfigError(
            source, line_of(entry, EXTENSION_KEY), f"{where}: {EXTENSION_KEY!r} must be an object of lock fields"
        )
    check_keys(extension, LOCK_FIELDS, source, f"{where} {EXTENSION_KEY}")  # our own namespace: a typo is an error
    for key, value in extension.items():
        if key in part and part[key] != value:
            raise ConfigError(
                source,
                line_of(extension, key),
                f"{where}: {key!r} given twice, differently, at the top level and in {EXTENSION_KEY!r}",
            )
        part[key] = value
        part.key_lines[key] = line_of(extension, key)
    return part


def server_id_from_name(name: str) -> str:
    """A lock id from a display name: 'Unit Converter' -> 'unit_converter'."""
    sid = re.sub(r"[^A-Za-z0-9-]+", "_", name).strip("_-").lower()
    sid = re.sub(r"_+", "_", sid)[:40]
    return sid or "server"
