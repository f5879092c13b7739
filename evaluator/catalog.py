"""An optional tool catalog: which tools exist, their descriptions and input schemas.

The call log names tools and carries each schema's digest, not the schema.
A catalog fills the gaps: schemas to re-check arguments with MCP-Bench's
semantics, names for the audit's near-miss matching (tools nobody called
still attract misspelt calls), and the tool list the rubric judge reads.

Accepted shapes (JSON):
- a list of {"server", "name" | "tool", "exposed_name"?, "description"?, "inputSchema" | "input_schema"?};
- {"server id": {"tools": [...]}} or {"server id": [tools...]} (a tools/list result per server);
- MCP-Bench's available_tools: {"Server Name:tool": {"server", "name"?, "description", "input_schema"}}.

A schema that is not a JSON Schema object (a list, a string) and, in the
MCP-Bench shape, an entry that is null or not an object do not refuse the
catalog: MCP-Bench scores calls to such a tool non-compliant and every other
call normally, and so does the evaluator (`unusable` says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.jsonio import Fields, kind, line_of, load_json
from mcpgw.evaluator.schemas import SchemaChecks


def _entry(raw: Any, source: str, path: str, server: str | None = None, exposed: str | None = None) -> dict[str, Any]:
    f = Fields(raw, source, line_of(raw), path)
    name = f.text("name", "tool", required=exposed is None)
    server = f.text("server", required=server is None, default=server)
    if name is None:  # MCP-Bench key "Server Name:tool"
        name = exposed.split(":", 1)[1] if exposed and ":" in exposed else exposed
    schema = raw.get("inputSchema", raw.get("input_schema"))
    return {
        "server": server,
        "tool": name,
        "exposed_name": f.text("exposed_name", required=False) or exposed or name,
        "description": f.text("description", required=False, default=""),
        "inputSchema": schema,
        "unusable": None,
    }


def _unusable_entry(key: str, value: Any) -> dict[str, Any]:
    """An MCP-Bench available_tools entry that is null or not an object: the name exists, every call to it fails
    the schema check (MCP-Bench's `.get` on it raises inside its catch-all)."""
    server, _, name = key.partition(":")
    return {
        "server": server,
        "tool": name or key,
        "exposed_name": key,
        "description": "",
        "inputSchema": None,
        "unusable": f"catalog entry {key!r} is {kind(value)}, not a tool object",
    }


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
                tools.append(
                    _entry(value, source, key, server=str(value.get("server") or key.split(":", 1)[0]), exposed=key)
                )
            elif ":" in key:  # MCP-Bench shape with a broken entry: scored, not refused
                tools.append(_unusable_entry(key, value))
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
        if tool.get("unusable"):
            tool["input_schema_digest"] = checks.add_failing(f"unusable:{tool['exposed_name']}", tool["unusable"])
        elif tool["inputSchema"] is not None:
            tool["input_schema_digest"] = checks.add(tool["inputSchema"])
    return checks


def names(catalog: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(t["server"], t["tool"], t["exposed_name"]) for t in catalog]
