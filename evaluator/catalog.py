"""An optional tool catalog: which tools exist, their descriptions and input schemas.

The call log names tools and carries each schema's digest, not the schema.
A catalog fills the gaps: schemas to re-check arguments with MCP-Bench's
semantics, names for the audit's near-miss matching (tools nobody called
still attract misspelt calls), and the tool list the rubric judge reads.

Accepted shapes (JSON):
- a list of {"server", "name" | "tool", "exposed_name"?, "description"?, "inputSchema" | "input_schema"?};
- {"server id": {"tools": [...]}} or {"server id": [tools...]} (a tools/list result per server);
- MCP-Bench's available_tools: {"Server Name:tool": {"server", "name"?, "description", "input_schema"}}.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evaluator.errors import InputError
from evaluator.jsonio import Fields, kind, line_of, load_json
from evaluator.schemas import SchemaChecks


def _entry(raw: Any, source: str, path: str, server: str | None = None, exposed: str | None = None) -> dict[str, Any]:
    f = Fields(raw, source, line_of(raw), path)
    name = f.text("name", "tool", required=exposed is None)
    server = f.text("server", required=server is None, default=server)
    if name is None:  # MCP-Bench key "Server Name:tool"
        name = exposed.split(":", 1)[1] if exposed and ":" in exposed else exposed
    schema = raw.get("inputSchema", raw.get("input_schema"))
    if schema is not None and not isinstance(schema, (Mapping, bool)):
        raise f.fail("inputSchema", f"expected a JSON Schema object, got {kind(schema)}")
    return {"server": server, "tool": name, "exposed_name": f.text("exposed_name", required=False) or exposed or name,
            "description": f.text("description", required=False, default=""), "inputSchema": schema}


def read_catalog(path: str | Path) -> list[dict[str, Any]]:
    source = str(path)
    data = load_json(path)
    tools: list[dict[str, Any]] = []
    if isinstance(data, list):
        tools = [_entry(raw, source, f"[{i}]") for i, raw in enumerate(data)]
    elif isinstance(data, Mapping):
        for key, value in data.items():
            if isinstance(value, list):
                tools += [_entry(raw, source, f"{key}[{i}]", server=key) for i, raw in enumerate(value)]
            elif isinstance(value, Mapping) and isinstance(value.get("tools"), list):
                tools += [_entry(raw, source, f"{key}.tools[{i}]", server=key) for i, raw in enumerate(value["tools"])]
            elif isinstance(value, Mapping):
                tools.append(_entry(value, source, key, server=str(value.get("server") or key.split(":", 1)[0]),
                                    exposed=key))
            else:
                raise InputError(source, line_of(data), key, f"expected a tool or a list of tools, got {kind(value)}")
    else:
        raise InputError(source, line_of(data, 1), None, f"expected a tool catalog (list or object), got {kind(data)}")
    if not tools:
        raise InputError(source, None, None, "the catalog lists no tools")
    return tools


def schema_checks(catalog: list[dict[str, Any]]) -> SchemaChecks:
    checks = SchemaChecks()
    for tool in catalog:
        if tool["inputSchema"] is not None:
            tool["input_schema_digest"] = checks.add(tool["inputSchema"])
    return checks


def names(catalog: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(t["server"], t["tool"], t["exposed_name"]) for t in catalog]
