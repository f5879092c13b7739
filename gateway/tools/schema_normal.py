"""JSON Schemas in one normal form, and what they admit: read the same way whatever the spelling.

A schema is made a dict with its local `$ref`s resolved and the `anyOf: [X, {"type": "null"}]`
(or OpenAPI `nullable`) form of an optional value folded into X; the readers say which JSON types,
which values, which required properties it admits. Used by gateway.tools.schema_diff to classify changes.
"""

from __future__ import annotations

import json
from typing import Any

ANNOTATIONS = {
    "description",
    "title",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "markdownDescription",
}
MAX_DEPTH = 32


def normalize(schema: Any, root: Any, refs: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A dict schema with its local `$ref` resolved and an optional-value union folded in."""
    if schema is True or schema is None:
        schema = {}
    elif schema is False:
        schema = {"not": {}}
    elif not isinstance(schema, dict):
        schema = {"not-a-schema": schema}
    for _ in range(MAX_DEPTH):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or ref in refs:
            break
        target = pointer(root, ref)
        if target is None:
            break
        refs = (*refs, ref)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**(target if isinstance(target, dict) else {}), **siblings}
    if schema.get("nullable") is True:  # OpenAPI 3.0 style
        schema = {k: v for k, v in schema.items() if k != "nullable"}
        types = types_of(schema)
        if types is not None:
            schema["type"] = sorted(types | {"null"})
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if not isinstance(branches, list):
            continue
        nulls = [b for b in branches if isinstance(b, dict) and b.get("type") == "null" and len(b) == 1]
        others = [b for b in branches if b not in nulls]
        if nulls and len(others) == 1:
            inner, refs = normalize(others[0], root, refs)
            rest = {k: v for k, v in schema.items() if k != keyword}
            merged = {**inner, **rest}
            types = types_of(inner)
            if types is not None:
                merged["type"] = sorted(types | {"null"})
            if isinstance(merged.get("enum"), list) and None not in merged["enum"]:
                merged["enum"] = [*merged["enum"], None]
            return merged, refs
    return schema, refs


def pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return None  # remote references are not followed
    node = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def types_of(schema: dict[str, Any]) -> frozenset[str] | None:
    """The JSON types a schema admits; None when it does not restrict them."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return frozenset(declared)
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            union: set[str] = set()
            for branch in branches:
                inner = types_of(branch) if isinstance(branch, dict) else None
                if inner is None:
                    return None
                union |= inner
            return frozenset(union)
    values = enum_of(schema)
    if values is not None:
        return frozenset(json_type(json.loads(v)) for v in values)
    return None


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def covers(after: frozenset[str] | None, before: frozenset[str] | None) -> bool:
    """Does every value of type `before` still have a type in `after`?"""
    if after is None:
        return True
    if before is None:
        return False
    return all(t in after or (t == "integer" and "number" in after) for t in before)


def enum_of(schema: dict[str, Any]) -> frozenset[str] | None:
    if "const" in schema:
        return frozenset({canonical(schema["const"])})
    values = schema.get("enum")
    if isinstance(values, list):
        return frozenset(canonical(v) for v in values)
    return None


def required_of(schema: dict[str, Any]) -> set[str]:
    required = schema.get("required")
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def type_only(branches: list[Any]) -> bool:
    return all(isinstance(b, dict) and set(strip_annotations(b)) <= {"type"} for b in branches)


def strip_annotations(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ANNOTATIONS and k != "default"}


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
