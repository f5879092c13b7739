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

A tool whose schema declares no default has no equivalent calls but the exact one,
so its recordings are not indexed at all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeGuard

from mcpgw.cassette.keys import base_key, with_history

Schema = dict[str, Any]


def has_defaults(schema: Any) -> TypeGuard[Schema]:
    """Whether normalising under `schema` can change anything."""
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for sub in properties.values():
            if isinstance(sub, dict) and ("default" in sub or has_defaults(sub)):
                return True
    return has_defaults(schema.get("items"))


def normalise(value: Any, schema: Any) -> Any:
    """`value` with the defaults `schema` declares filled in where absent (a new value; `value` is untouched)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        out = dict(value)
        for name, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            if name in out:
                out[name] = normalise(out[name], sub)
            elif "default" in sub:
                out[name] = normalise(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [normalise(item, schema["items"]) for item in value]
    return value


def equivalent_base(server: str, params: dict[str, Any], schema: Schema) -> str:
    """The key of what a tools/call asks once normalised (its history is added by the caller)."""
    arguments = params.get("arguments")
    normal = {k: v for k, v in params.items() if k != "_meta"}
    normal["arguments"] = normalise(arguments if arguments is not None else {}, schema)
    return base_key(server, "tools/call", normal)


class Equivalents:
    """One server's recorded tools/calls by their normalised key (normalised base @ history) -> the recorded key.

    Built on first use (only a miss asks), from the replay index: `recorded` is key -> entries in order."""

    def __init__(self, server: str, schemas: Callable[[str], Schema | None]) -> None:
        self.server = server
        self.schemas = schemas  # tool name -> its inputSchema in the recorded catalog (None: unknown tool)
        self._by_normal: dict[str, str] | None = None

    def build(self, recorded: dict[str, list[dict[str, Any]]]) -> None:
        by_normal: dict[str, str] = {}
        for key, entries in recorded.items():
            entry = entries[0]
            if entry.get("method") != "tools/call":
                continue
            params = entry.get("params") or {}
            schema = self.schemas(str(params.get("name")))
            if not has_defaults(schema):
                continue
            normal = with_history(equivalent_base(self.server, params, schema), entry.get("history") or "")
            by_normal.setdefault(normal, key)  # the first recorded of several equivalent ones
        self._by_normal = by_normal

    def add(self, key: str, entry: dict[str, Any]) -> None:
        """An answer added during the run (live, simulated): an equivalent call later replays it too."""
        if self._by_normal is None or entry.get("method") != "tools/call":
            return
        params = entry.get("params") or {}
        schema = self.schemas(str(params.get("name")))
        if has_defaults(schema):
            normal = with_history(equivalent_base(self.server, params, schema), entry.get("history") or "")
            self._by_normal.setdefault(normal, key)

    def find(self, recorded: dict[str, list[dict[str, Any]]], method: str, params: dict[str, Any] | None,
             history: str) -> str | None:
        """The recorded key of a call equivalent to this one at this history, if any."""
        if method != "tools/call" or not params:
            return None
        schema = self.schemas(str(params.get("name")))
        if not has_defaults(schema):
            return None
        if self._by_normal is None:
            self.build(recorded)
        assert self._by_normal is not None
        return self._by_normal.get(with_history(equivalent_base(self.server, params, schema), history))
