"""Equivalent calls: the same call once its arguments are normalised by the tool's `inputSchema`.

A new model asks what the recorded one asked, written another way: it spells out a
default the recorded call left out, or leaves out one the recorded call spelled out.
Under the tool's schema the server receives the same thing, so the recorded answer
is the answer. Only transformations that cannot change what a server receives
count: a property the schema gives a `default`, filled in where it is absent, at
every level the schema names plainly (`properties`, `items`). Nothing else:
no type coercion, no case folding, no `anyOf`/`oneOf`/`$ref` guessing (a default
under a choice is not known to apply), no similarity. Key order and 1 vs 1.0 are
already the same request (cassette.keys).

Filling is sound only where the schema says plainly what absence means, so:
- a default that fails its own property's schema is never filled (the schema
  contradicts itself: absence means nothing known);
- no level is normalised (nor anything below it) when what applies there depends
  on the values or the set of properties present (`oneOf`, `anyOf`, `allOf`, `not`,
  `if`/`then`/`else`, `dependent*`, `min`/`maxProperties`, `enum`/`const`, `$ref`,
  `contains`, `uniqueItems`...): filling a value there could change which rules hold;
- a match counts only when the recorded call, the new call and both normalised
  forms all validate against the whole `inputSchema` (an invalid call is answered
  as what it is, never as the recording of a valid one).
`default: null` on a property that accepts null is filled like any other default:
the schema says absence means null (FastMCP writes `Optional[x] = None` exactly so,
and its server then receives None either way). Where null is not accepted
(`{"type": "string", "default": null}`) it fails its own schema and is not filled.

A tool whose schema declares no default that may be filled has no equivalent calls
but the exact one, so its recordings are not indexed at all. Each schema's plan
and validator are made once, on the first miss that asks about its tool.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from mcpgw.cassette.keys import base_key, with_history
from mcpgw.gateway.tools.validation import CompiledSchema, ValidatorCache

Schema = dict[str, Any]

# Keywords that make a level's rules depend on the values or the set of properties present.
CONDITIONAL = frozenset(
    {
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "minProperties",
        "maxProperties",
        "enum",
        "const",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "contains",
        "minContains",
        "maxContains",
        "uniqueItems",
    }
)

_ABSENT = object()


@dataclass(frozen=True, slots=True)
class Plan:
    """What normalising under one schema level fills: its properties' plans and defaults, its items' plan."""

    properties: dict[str, tuple[Any, Plan]] = field(default_factory=dict)  # name -> (default or _ABSENT, plan)
    items: Plan | None = None

    @property
    def fills(self) -> bool:
        if self.items is not None and self.items.fills:
            return True
        return any(default is not _ABSENT or sub.fills for default, sub in self.properties.values())

    def normalise(self, value: Any) -> Any:
        """`value` with this plan's defaults filled in where absent (a new value; `value` is untouched)."""
        if isinstance(value, dict):
            if not self.properties:
                return value
            out = dict(value)
            for name, (default, sub) in self.properties.items():
                if name in out:
                    out[name] = sub.normalise(out[name])
                elif default is not _ABSENT:
                    out[name] = sub.normalise(copy.deepcopy(default))
            return out
        if isinstance(value, list) and self.items is not None:
            return [self.items.normalise(item) for item in value]
        return value


NOTHING = Plan()


def plan_for(schema: Any, accepts: Callable[[Any, Schema], bool]) -> Plan:
    """The plan of `schema`: `accepts(value, subschema)` says whether a default satisfies its own property's schema."""
    if not isinstance(schema, dict) or CONDITIONAL.intersection(schema):
        return NOTHING
    properties: dict[str, tuple[Any, Plan]] = {}
    declared = schema.get("properties")
    if isinstance(declared, dict):
        for name, sub in declared.items():
            if not isinstance(sub, dict):
                continue
            default = sub["default"] if "default" in sub and accepts(sub["default"], sub) else _ABSENT
            plan = plan_for(sub, accepts)
            if default is not _ABSENT or plan.fills:
                properties[name] = (default, plan)
    items = plan_for(schema.get("items"), accepts) if isinstance(schema.get("items"), dict) else None
    out = Plan(properties, items if items is not None and items.fills else None)
    return out if out.fills else NOTHING


def _acceptor(validator: Any) -> Callable[[Any, Schema], bool]:
    """Checks a default against its subschema with the root's draft (and the root for any `$ref` inside)."""

    def accepts(value: Any, sub: Schema) -> bool:
        try:
            return bool(validator.evolve(schema=sub).is_valid(value))
        except Exception:  # an unresolvable $ref, a bad pattern: not known to hold, so not filled
            return False

    return accepts


def _root_validator(schema: Any) -> Any:
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:
        return None


def has_defaults(schema: Any) -> TypeGuard[Schema]:
    """Whether normalising under `schema` can change anything."""
    validator = _root_validator(schema)
    return validator is not None and isinstance(schema, dict) and plan_for(schema, _acceptor(validator)).fills


def normalise(value: Any, schema: Any) -> Any:
    """`value` with the defaults `schema` may fill filled in where absent (a new value; `value` is untouched)."""
    validator = _root_validator(schema)
    return plan_for(schema, _acceptor(validator)).normalise(value) if validator is not None else value


@dataclass(slots=True)
class ToolArguments:
    """One tool's schema, compiled once: its plan and its whole-schema validator."""

    schema: Schema
    plan: Plan
    compiled: CompiledSchema

    def normal(self, arguments: Any) -> Any:
        """The arguments normalised, or _ABSENT when this call may not be matched to another (either form invalid)."""
        if arguments is None:
            arguments = {}
        if self.compiled.check(arguments).valid is not True:
            return _ABSENT
        normal = self.plan.normalise(arguments)
        if normal != arguments and self.compiled.check(normal).valid is not True:
            return _ABSENT
        return normal


class Equivalents:
    """One server's recorded tools/calls by their normalised key (normalised base @ history) -> the recorded key.

    Built on first use (only a miss asks), from the replay index: `recorded` is key -> entries in order."""

    def __init__(self, server: str, schemas: Callable[[str], Schema | None]) -> None:
        self.server = server
        self.schemas = schemas  # tool name -> its inputSchema in the recorded catalog (None: unknown tool)
        self._by_normal: dict[str, str] | None = None
        self._validators = ValidatorCache()
        # by tool name: (the schema it was made from, its compiled form); made again if the catalog's schema changes
        self._tools: dict[str, tuple[Schema, ToolArguments | None]] = {}

    def _tool(self, name: str) -> ToolArguments | None:
        """The tool's compiled schema when it has defaults that may be filled, else None."""
        schema = self.schemas(name)
        if schema is None:
            return None
        known = self._tools.get(name)
        if known is not None and known[0] is schema:
            return known[1]
        tool = self._make(schema)
        self._tools[name] = (schema, tool)
        return tool

    def _make(self, schema: Schema) -> ToolArguments | None:
        compiled = self._validators.compile(schema)
        if compiled.validator is None:  # an invalid schema: no call is known to be valid
            return None
        plan = plan_for(schema, _acceptor(compiled.validator))
        return ToolArguments(schema, plan, compiled) if plan.fills else None

    def _key(self, params: dict[str, Any], history: str) -> str | None:
        """The normalised key of a tools/call, or None when it has none (no defaults, unknown tool, invalid call)."""
        tool = self._tool(str(params.get("name")))
        if tool is None:
            return None
        normal_arguments = tool.normal(params.get("arguments"))
        if normal_arguments is _ABSENT:
            return None
        normal = {k: v for k, v in params.items() if k != "_meta"}
        normal["arguments"] = normal_arguments
        return with_history(base_key(self.server, "tools/call", normal), history)

    def build(self, recorded: dict[str, list[dict[str, Any]]]) -> None:
        by_normal: dict[str, str] = {}
        for key, entries in recorded.items():
            entry = entries[0]
            if entry.get("method") != "tools/call":
                continue
            normal = self._key(entry.get("params") or {}, entry.get("history") or "")
            if normal is not None:
                by_normal.setdefault(normal, key)  # the first recorded of several equivalent ones
        self._by_normal = by_normal

    def add(self, key: str, entry: dict[str, Any]) -> None:
        """An answer added during the run (live, simulated): an equivalent call later replays it too."""
        if self._by_normal is None or entry.get("method") != "tools/call":
            return
        normal = self._key(entry.get("params") or {}, entry.get("history") or "")
        if normal is not None:
            self._by_normal.setdefault(normal, key)

    def find(
        self, recorded: dict[str, list[dict[str, Any]]], method: str, params: dict[str, Any] | None, history: str
    ) -> str | None:
        """The recorded key of a call equivalent to this one at this history, if any."""
        if method != "tools/call" or not params:
            return None
        if self._tool(str(params.get("name"))) is None:  # no defaults: only the exact call (already missed)
            return None
        if self._by_normal is None:
            self.build(recorded)
        assert self._by_normal is not None
        normal = self._key(params, history)
        return self._by_normal.get(normal) if normal is not None else None
