"""Classify how a tool catalog changed: pure functions over tool definitions and JSON Schemas.

A change is *breaking* when a call that was valid against the old definition
may fail, or mean something else, against the new one: a removed tool, a
removed parameter, a new required parameter, a parameter that became required,
a retyped parameter, a narrowed enum or constraint, closed
`additionalProperties`. It is *compatible* when every old call still works:
an added tool, a new optional parameter, a widened type or enum, a relaxed
constraint, a description, title or default that changed. A change to a
keyword this module does not understand counts as breaking, and says so.

Schemas are compared after local `$ref`s are resolved and the
`anyOf: [X, {"type": "null"}]` form of an optional value is folded into X (gateway.tools.schema_normal).

    diff_tools(old, new)        -> [Change]   (name -> tool definition)
    diff_schema(old, new, tool) -> [Change]
    diff_catalogs(old, new)     -> {"breaking": [...], "compatible": [...]}  (tool lists; for drift)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcpgw.gateway.tools.schema_normal import (
    ANNOTATIONS,
    MAX_DEPTH,
    canonical,
    covers,
    enum_of,
    normalize,
    required_of,
    strip_annotations,
    type_only,
    types_of,
)

TOOL_REMOVED = "tool_removed"
TOOL_ADDED = "tool_added"
PARAM_REMOVED = "param_removed"
PARAM_ADDED_REQUIRED = "param_added_required"
PARAM_ADDED_OPTIONAL = "param_added_optional"
NOW_REQUIRED = "param_now_required"
NOW_OPTIONAL = "param_now_optional"
TYPE_CHANGED = "type_changed"
TYPE_WIDENED = "type_widened"
ENUM_NARROWED = "enum_narrowed"
ENUM_WIDENED = "enum_widened"
CONSTRAINT_NARROWED = "constraint_narrowed"
CONSTRAINT_RELAXED = "constraint_relaxed"
VARIANT_REMOVED = "variant_removed"
VARIANT_ADDED = "variant_added"
EXTRA_CLOSED = "additional_properties_closed"
EXTRA_OPENED = "additional_properties_opened"
DEFAULT_CHANGED = "default_changed"
DESCRIPTION_CHANGED = "description_changed"
SCHEMA_CHANGED = "schema_changed"  # a keyword this module does not classify: counted as breaking


@dataclass(frozen=True, slots=True)
class Change:
    tool: str
    kind: str
    breaking: bool
    path: str = ""  # the parameter: "units", "options.mode", "points[]", "" for the tool itself
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "kind": self.kind,
            "breaking": self.breaking,
            "path": self.path,
            "detail": self.detail,
        }

    def describe(self) -> str:
        where = f"{self.tool}.{self.path}" if self.path else self.tool
        return f"{where}: {self.kind.replace('_', ' ')}" + (f" ({self.detail})" if self.detail else "")


def is_breaking(changes: list[Change]) -> bool:
    return any(c.breaking for c in changes)


def diff_catalogs(old_tools: list[dict[str, Any]], new_tools: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Two `tools/list` results -> the changes, split into breaking and compatible (JSON-ready)."""
    old = {t["name"]: t for t in old_tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    new = {t["name"]: t for t in new_tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    changes = diff_tools(old, new)
    return {
        "breaking": [c.as_dict() for c in changes if c.breaking],
        "compatible": [c.as_dict() for c in changes if not c.breaking],
    }


def diff_tools(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Change]:
    """Tool name -> definition (`description`, `inputSchema`), before and after."""
    changes = [Change(name, TOOL_REMOVED, True) for name in sorted(old.keys() - new.keys())]
    changes += [Change(name, TOOL_ADDED, False) for name in sorted(new.keys() - old.keys())]
    for name in sorted(old.keys() & new.keys()):
        if (old[name].get("description") or "") != (new[name].get("description") or ""):
            changes.append(Change(name, DESCRIPTION_CHANGED, False, "", "tool description"))
        changes += diff_schema(old[name].get("inputSchema", {}), new[name].get("inputSchema", {}), name)
    return changes


def diff_schema(old: Any, new: Any, tool: str = "") -> list[Change]:
    """The changes from one input schema to the next, for the tool named `tool`."""
    return list(_Differ(tool, old, new).node(old, new, "", (), ()))


# -- the walk ---------------------------------------------------------------------

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_EXACT = ("pattern", "format", "multipleOf")
_HANDLED = {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "nullable",
    "default",
    "uniqueItems",
    *_LOWER_BOUNDS,
    *_UPPER_BOUNDS,
    *_EXACT,
}


class _Differ:
    def __init__(self, tool: str, old_root: Any, new_root: Any) -> None:
        self.tool = tool
        self.old_root = old_root
        self.new_root = new_root

    def change(self, kind: str, breaking: bool, path: str, detail: str = "") -> Change:
        return Change(self.tool, kind, breaking, path, detail)

    def node(
        self, old: Any, new: Any, path: str, old_refs: tuple[str, ...], new_refs: tuple[str, ...]
    ) -> Iterator[Change]:
        if len(old_refs) + len(new_refs) > MAX_DEPTH:
            return
        old, old_refs = normalize(old, self.old_root, old_refs)
        new, new_refs = normalize(new, self.new_root, new_refs)
        if canonical(old) == canonical(new):
            return
        if old.get("$ref") is not None or new.get("$ref") is not None:  # a cycle we stopped following
            yield self.change(SCHEMA_CHANGED, True, path, "recursive definition changed")
            return
        yield from self.types(old, new, path)
        yield from self.enums(old, new, path)
        yield from self.bounds(old, new, path)
        yield from self.objects(old, new, path, old_refs, new_refs)
        if isinstance(old.get("items"), dict) or isinstance(new.get("items"), dict):
            yield from self.node(old.get("items", {}), new.get("items", {}), f"{path}[]", old_refs, new_refs)
        elif old.get("items") != new.get("items"):
            yield self.change(SCHEMA_CHANGED, True, path, "keyword 'items' changed (not classified)")
        for keyword in ("anyOf", "oneOf", "allOf"):
            yield from self.variants(keyword, old, new, path, old_refs, new_refs)
        if ("default" in old) != ("default" in new) or canonical(old.get("default")) != canonical(new.get("default")):
            yield self.change(DEFAULT_CHANGED, False, path, f"{_short(old, 'default')} -> {_short(new, 'default')}")
        if any(old.get(k) != new.get(k) for k in ("description", "title")):
            yield self.change(DESCRIPTION_CHANGED, False, path, "" if path else "input schema description")
        for keyword in sorted((old.keys() | new.keys()) - _HANDLED - ANNOTATIONS):
            if canonical(old.get(keyword)) != canonical(new.get(keyword)):
                yield self.change(SCHEMA_CHANGED, True, path, f"keyword {keyword!r} changed (not classified)")

    def types(self, old: dict[str, Any], new: dict[str, Any], path: str) -> Iterator[Change]:
        before, after = types_of(old), types_of(new)
        if before == after:
            return
        if covers(after, before):
            yield self.change(TYPE_WIDENED, False, path, f"{_type_text(before)} -> {_type_text(after)}")
        else:
            yield self.change(TYPE_CHANGED, True, path, f"{_type_text(before)} -> {_type_text(after)}")

    def enums(self, old: dict[str, Any], new: dict[str, Any], path: str) -> Iterator[Change]:
        before, after = enum_of(old), enum_of(new)
        if before == after:
            return
        if after is None:
            yield self.change(ENUM_WIDENED, False, path, "no longer restricted to a list of values")
        elif before is None:
            yield self.change(ENUM_NARROWED, True, path, f"now restricted to {_values(after)}")
        elif before - after:
            yield self.change(
                ENUM_NARROWED,
                True,
                path,
                f"removed {_values(before - after)}" + (f", added {_values(after - before)}" if after - before else ""),
            )
        else:
            yield self.change(ENUM_WIDENED, False, path, f"added {_values(after - before)}")

    def bounds(self, old: dict[str, Any], new: dict[str, Any], path: str) -> Iterator[Change]:
        for keyword in _LOWER_BOUNDS + _UPPER_BOUNDS:
            a, b = old.get(keyword), new.get(keyword)
            if a == b and isinstance(a, bool) == isinstance(b, bool):
                continue
            narrowed = _bound_narrowed(a, b, lower=keyword in _LOWER_BOUNDS)
            yield self.change(
                CONSTRAINT_NARROWED if narrowed else CONSTRAINT_RELAXED,
                narrowed,
                path,
                f"{keyword} {_short(old, keyword)} -> {_short(new, keyword)}",
            )
        for keyword in _EXACT:
            a, b = old.get(keyword), new.get(keyword)
            if a == b:
                continue
            narrowed = b is not None  # added or changed: old values may no longer match
            yield self.change(
                CONSTRAINT_NARROWED if narrowed else CONSTRAINT_RELAXED,
                narrowed,
                path,
                f"{keyword} {_short(old, keyword)} -> {_short(new, keyword)}",
            )
        a, b = bool(old.get("uniqueItems")), bool(new.get("uniqueItems"))
        if a != b:
            yield self.change(CONSTRAINT_NARROWED if b else CONSTRAINT_RELAXED, b, path, f"uniqueItems {a} -> {b}")

    def objects(
        self, old: dict[str, Any], new: dict[str, Any], path: str, old_refs: tuple[str, ...], new_refs: tuple[str, ...]
    ) -> Iterator[Change]:
        old_props, new_props = _properties(old), _properties(new)
        old_req, new_req = required_of(old), required_of(new)
        for name in sorted(old_props.keys() - new_props.keys()):
            yield self.change(PARAM_REMOVED, True, _join(path, name))
        for name in sorted(new_props.keys() - old_props.keys()):
            if name in new_req:
                yield self.change(PARAM_ADDED_REQUIRED, True, _join(path, name))
            else:
                yield self.change(PARAM_ADDED_OPTIONAL, False, _join(path, name))
        for name in sorted(old_props.keys() & new_props.keys()):
            yield from self.node(old_props[name], new_props[name], _join(path, name), old_refs, new_refs)
        for name in sorted(new_req - old_req):
            if name in old_props or name not in new_props:  # a new property that is required was reported above
                yield self.change(NOW_REQUIRED, True, _join(path, name))
        for name in sorted(old_req - new_req):
            if name in new_props or name not in old_props:  # a removed property was reported above
                yield self.change(NOW_OPTIONAL, False, _join(path, name))
        yield from self.extra(
            old.get("additionalProperties"), new.get("additionalProperties"), path, old_refs, new_refs
        )

    def extra(
        self, old: Any, new: Any, path: str, old_refs: tuple[str, ...], new_refs: tuple[str, ...]
    ) -> Iterator[Change]:
        if old == new:
            return
        old_open, new_open = old is not False, new is not False
        if old_open and not new_open:
            yield self.change(EXTRA_CLOSED, True, path, "parameters not in the schema are now refused")
        elif new_open and not old_open:
            yield self.change(EXTRA_OPENED, False, path, "parameters not in the schema are now accepted")
        elif isinstance(old, dict) or isinstance(new, dict):  # both open, at least one a schema
            yield from self.node(
                old if isinstance(old, dict) else {},
                new if isinstance(new, dict) else {},
                _join(path, "*"),
                old_refs,
                new_refs,
            )

    def variants(
        self,
        keyword: str,
        old: dict[str, Any],
        new: dict[str, Any],
        path: str,
        old_refs: tuple[str, ...],
        new_refs: tuple[str, ...],
    ) -> Iterator[Change]:
        a, b = old.get(keyword), new.get(keyword)
        if a == b:
            return
        a = a if isinstance(a, list) else []
        b = b if isinstance(b, list) else []
        if keyword != "allOf" and type_only(a) and type_only(b):
            return  # a union of plain types: `types` has classified it
        if len(a) == len(b):  # same shape: compare branch by branch
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                yield from self.node(x, y, f"{path}<{keyword}[{i}]>", old_refs, new_refs)
            return
        before = {canonical(strip_annotations(normalize(x, self.old_root, old_refs)[0])) for x in a}
        after = {canonical(strip_annotations(normalize(x, self.new_root, new_refs)[0])) for x in b}
        removed, added = len(before - after), len(after - before)
        if keyword == "allOf":  # every branch must hold: a new one narrows, a dropped one relaxes
            removed, added = added, removed
        if removed:
            yield self.change(
                VARIANT_REMOVED if keyword != "allOf" else CONSTRAINT_NARROWED,
                True,
                path,
                f"{keyword}: {len(before)} -> {len(after)} branches",
            )
        elif added:
            yield self.change(
                VARIANT_ADDED if keyword != "allOf" else CONSTRAINT_RELAXED,
                False,
                path,
                f"{keyword}: {len(before)} -> {len(after)} branches",
            )


# -- classification and wording ----------------------------------------------------------


def _bound_narrowed(old: Any, new: Any, *, lower: bool) -> bool:
    """Is a bound tighter now? Draft-4 boolean exclusiveMinimum/Maximum count as flags."""
    if isinstance(old, bool) or isinstance(new, bool):
        return bool(new) and not bool(old)
    if new is None:
        return False
    if old is None or not isinstance(old, (int, float)) or not isinstance(new, (int, float)):
        return True
    return new > old if lower else new < old


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_text(types: frozenset[str] | None) -> str:
    return "any" if types is None else "|".join(sorted(types))


def _values(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))


def _short(schema: dict[str, Any], keyword: str, limit: int = 60) -> str:
    text = canonical(schema[keyword]) if keyword in schema else "unset"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}
