"""Exposed names -> the benchmark's server and tool names, through the lock's titles.

The gateway exposes `unit_converter__convert_temperature` (prefix naming) or
`Unit Converter:convert_temperature` (benchmark naming); MCP-Bench tasks name
servers by title ("Unit Converter"), and MCPEval ground truth may use either
the upstream tool name or the name the agent saw. Records carry the server id
and upstream tool; the titles come from the lock entries (a run's manifest or
the cassette's recorded servers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def add_titles(records: Iterable[dict[str, Any]], titles: Mapping[str, str]) -> None:
    """Stamp each record with its server's benchmark name (`server_title`)."""
    for record in records:
        server = record.get("server")
        if server is not None and record.get("server_title") is None:
            record["server_title"] = titles.get(server) or server


def bare_tool(name: str, titles: Mapping[str, str], separator: str = "__") -> str:
    """The upstream tool name inside an exposed name (the name itself when it has no server part)."""
    for sid, title in sorted(titles.items(), key=lambda item: -len(item[0])):
        for prefix in (sid + separator, f"{title}:", f"{sid}:"):
            if name.startswith(prefix) and len(name) > len(prefix):
                return name[len(prefix) :]
    return name


def titles_of(servers: Mapping[str, Any]) -> dict[str, str]:
    """server id -> title, from lock entries as a cassette stores them (or a plain id -> title map)."""
    out = {}
    for sid, entry in servers.items():
        title = entry.get("title") if isinstance(entry, Mapping) else entry
        out[sid] = title or sid
    return out
