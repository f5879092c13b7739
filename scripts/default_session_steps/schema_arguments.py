"""Arguments for a tool nobody wrote a call for, generated from its inputSchema."""

from __future__ import annotations

from datetime import date
from typing import Any


def arguments_from_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool nobody wrote a call for: its required properties, each with the
    first enum value, its default or example, or a plain value of its type."""
    value = _example(schema, schema, 0)
    return value if isinstance(value, dict) else {}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _example(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 8:
        return None
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("default") is not None:
        return schema["default"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, dict) and o.get("type") != "null"]
        if options:
            return _example(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _example(props.get(name, {}), root, depth + 1) for name in schema.get("required") or []}
    if kind == "array":
        item = _example(schema.get("items") or {}, root, depth + 1)
        return [item] * max(1, int(schema.get("minItems") or 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    fmt = schema.get("format")
    text = {
        "date": date.today().isoformat(),
        "date-time": f"{date.today().isoformat()}T12:00:00Z",
        "uri": "https://example.com/",
        "email": "someone@example.com",
    }.get(fmt, "example")
    return text.ljust(int(schema.get("minLength") or 0), "x")
