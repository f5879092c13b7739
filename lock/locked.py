"""The `locked:` section of a lock entry: what the server offered when `mcpgw lock refresh` ran.

    locked:                      # written by `mcpgw lock refresh`
      server: {name: "mcp-servers/everything", version: "2.0.0"}
      pinned: "@modelcontextprotocol/server-everything@2026.8.31"
      protocol: "2025-11-25"
      tool_count: 13
      catalog_digest: "3f2a9c0d1e4b5a67"
      refreshed: "2026-11-22T10:04:05Z"
      tools:
        "echo": {description: "0c1d2e3f4a5b6c7d", input: '{"properties": {...}, "type": "object"}'}

`server` is what the server calls itself (often its SDK's version, not its
package's); `pinned` is the package@version the entry's command ran, so a
changed pin shows.
`catalog_digest` covers the tool names and input schemas (canonical JSON);
each tool keeps the digest of its description and its whole input schema, as
one line of JSON in a single-quoted YAML string (exact round trip, one line per
tool in a diff), so that `lock check` can classify what changed. Tools the
entry hides (`hide_tools`) are left out: the lock pins what the gateway exposes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.tools.validation import schema_digest
from mcpgw.lock.config import ServerSpec
from mcpgw.lock.launchers import infer_pin

KEY = "locked"


@dataclass(frozen=True)
class Locked:
    server_name: str | None
    server_version: str | None
    protocol: str | None
    catalog_digest: str
    refreshed: str | None
    pinned: str | None = None  # "package@version" of the entry's pin when it was locked
    tools: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # name -> {"description": digest, "inputSchema": schema}

    @property
    def tool_count(self) -> int:
        return len(self.tools)

    def same_as(self, other: Locked) -> bool:
        """Equal in everything but the time of the refresh."""
        return (self.server_name, self.server_version, self.pinned, self.protocol, self.catalog_digest, self.tools) == (
            other.server_name,
            other.server_version,
            other.pinned,
            other.protocol,
            other.catalog_digest,
            other.tools,
        )

    def summary(self) -> dict[str, Any]:
        return {
            "server": {"name": self.server_name, "version": self.server_version},
            "pinned": self.pinned,
            "protocol": self.protocol,
            "tool_count": self.tool_count,
            "catalog_digest": self.catalog_digest,
            "refreshed": self.refreshed,
        }


def exposed_tools(spec: ServerSpec, catalog: ServerCatalog) -> dict[str, dict[str, Any]]:
    """The tools the gateway exposes for this server, as the lock keeps them."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in catalog.tools:
        name = tool.get("name")
        if isinstance(name, str) and name not in spec.hide_tools:
            tools[name] = {
                "description": schema_digest(tool.get("description") or ""),
                "inputSchema": tool.get("inputSchema", {}),
            }
    return dict(sorted(tools.items()))


def catalog_digest(tools: dict[str, dict[str, Any]]) -> str:
    return schema_digest([[name, tools[name]["inputSchema"]] for name in sorted(tools)])


def snapshot(spec: ServerSpec, catalog: ServerCatalog, refreshed: str | None) -> Locked:
    info = catalog.init.get("serverInfo") or {}
    tools = exposed_tools(spec, catalog)
    return Locked(
        server_name=_str_or_none(info.get("name")),
        server_version=_str_or_none(info.get("version")),
        protocol=_str_or_none(catalog.init.get("protocolVersion")),
        catalog_digest=catalog_digest(tools),
        refreshed=refreshed,
        pinned=pinned(spec),
        tools=tools,
    )


def pinned(spec: ServerSpec) -> str | None:
    """ "package@version" the entry runs: from its npx / uvx command when that names one, else its `pin`."""
    pin = infer_pin(spec.command, spec.args) or spec.pin
    return f"{pin.package}@{pin.version}" if pin and pin.package and pin.version else None


def render(locked: Locked, indent: int, step: int = 2) -> str:
    """The `locked:` block as lines indented at `indent` (the entry's key column)."""
    pad, inner, tool_pad = " " * indent, " " * (indent + step), " " * (indent + 2 * step)
    server = f"{{name: {_q(locked.server_name)}, version: {_q(locked.server_version)}}}"
    lines = [
        f"{pad}{KEY}:  # written by `mcpgw lock refresh`; `mcpgw lock check` compares the live server with it",
        f"{inner}server: {server}",
        f"{inner}pinned: {_q(locked.pinned)}",
        f"{inner}protocol: {_q(locked.protocol)}",
        f"{inner}tool_count: {locked.tool_count}",
        f"{inner}catalog_digest: {_q(locked.catalog_digest)}",
        f"{inner}refreshed: {_q(locked.refreshed)}",
    ]
    if locked.tools:
        lines.append(f"{inner}tools:")
        for name, tool in locked.tools.items():
            schema = json.dumps(tool["inputSchema"], sort_keys=True, ensure_ascii=True)
            lines.append(
                f"{tool_pad}{_q(name)}: {{description: {_q(tool['description'])}, input: '{schema.replace(chr(39), chr(39) * 2)}'}}"
            )
    else:
        lines.append(f"{inner}tools: {{}}")
    return "\n".join(lines) + "\n"


def parse(server: str, data: Any, source: str) -> Locked:
    """Read an entry's `locked:` value back; a `ConfigError` names the server and what is wrong."""
    where = f"server {server!r}: {KEY}"
    if not isinstance(data, dict):
        raise ConfigError(source, None, f"{where} must be a mapping (written by `mcpgw lock refresh`)")
    info = data.get("server") or {}
    if not isinstance(info, dict):
        raise ConfigError(source, None, f"{where}.server must be a mapping of name and version")
    raw_tools = {} if data.get("tools") is None else data["tools"]
    if not isinstance(raw_tools, dict):
        raise ConfigError(source, None, f"{where}.tools must be a mapping of tool name -> definition")
    tools: dict[str, dict[str, Any]] = {}
    for name, tool in raw_tools.items():
        if not isinstance(tool, dict):
            raise ConfigError(source, None, f"{where}.tools.{name}: expected {{description, input}}")
        schema = tool.get("input", {})
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as exc:
                raise ConfigError(source, None, f"{where}.tools.{name}.input is not valid JSON: {exc.msg}") from None
        tools[str(name)] = {"description": str(tool.get("description") or schema_digest("")), "inputSchema": schema}
    digest = data.get("catalog_digest")
    if not isinstance(digest, str):
        raise ConfigError(source, None, f"{where}.catalog_digest is missing; run `mcpgw lock refresh` again")
    return Locked(
        server_name=_str_or_none(info.get("name")),
        server_version=_str_or_none(info.get("version")),
        protocol=_str_or_none(data.get("protocol")),
        catalog_digest=digest,
        refreshed=_str_or_none(data.get("refreshed")),
        pinned=_str_or_none(data.get("pinned")),
        tools=dict(sorted(tools.items())),
    )


def _q(value: str | None) -> str:
    return "null" if value is None else json.dumps(value, ensure_ascii=True)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
