"""Inline validation of tool arguments (and structured output) against JSON Schema.

Validators are compiled once per schema digest and shared by every tool that
uses the same schema. The draft is the one the schema declares in `$schema`,
2020-12 when it declares none. Format keywords are not checked (as MCP-Bench
does), so a verdict does not depend on which format checkers are installed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.validators import validator_for

from mcpgw.gateway.tools.schema_quick import quick_checker

MODES = ("enforce", "audit", "off")


def schema_digest(schema: Any) -> str:
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Problem:
    path: str  # JSONPath into the arguments: "$.units[0]"
    message: str
    keyword: str
    expected: Any = None
    received: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message, "keyword": self.keyword}


@dataclass(frozen=True, slots=True)
class Verdict:
    valid: bool | None  # None: not checked (validation off or nothing to check against)
    problems: tuple[Problem, ...] = ()
    schema_invalid: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "errors": [p.as_dict() for p in self.problems],
            "schema_invalid": self.schema_invalid,
        }

    def describe(self) -> str:
        return "; ".join(f"{p.path}: {p.message}" for p in self.problems)


UNCHECKED = Verdict(None)
VALID = Verdict(True)


@dataclass(slots=True)
class CompiledSchema:
    digest: str
    validator: Any = None  # a jsonschema validator instance, or None when the schema is invalid
    schema_error: str | None = None
    quick: Any = None  # a predicate that says "valid" at a tenth of jsonschema's cost (gateway.tools.schema_quick)

    def check(self, instance: Any) -> Verdict:
        if self.validator is None:
            problem = Problem("$", f"the tool's schema is itself invalid: {self.schema_error}", "schema")
            return Verdict(False, (problem,), schema_invalid=True)
        if self.quick is not None and self.quick(instance):
            return VALID
        # Most calls are valid, and is_valid stops at the first error.
        try:
            if self.validator.is_valid(instance):
                return VALID
            errors = sorted(self.validator.iter_errors(instance), key=_error_order)
        except (RecursionError, ValueError, TypeError) as exc:  # pathological schema, e.g. a bad regex
            problem = Problem("$", f"the tool's schema cannot be evaluated: {exc}", "schema")
            return Verdict(False, (problem,), schema_invalid=True)
        return Verdict(False, tuple(_problem(e) for e in errors[:10]))


def _error_order(error: ValidationError) -> tuple[int, str]:
    return (len(error.absolute_path), str(list(error.absolute_path)))


def _json_path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _problem(error: ValidationError) -> Problem:
    keyword = str(error.validator)
    path = _json_path(error.absolute_path)
    expected = error.validator_value
    received = error.instance
    if keyword == "required":
        missing = [name for name in expected if isinstance(received, dict) and name not in received]
        # jsonschema reports each missing name as an error of its own, saying which one in its message
        missing = [name for name in missing if error.message == f"{name!r} is a required property"] or missing
        path = _json_path([*error.absolute_path, missing[0]]) if missing else path
        message = f"required property {missing[0]!r} is missing" if missing else error.message
    elif keyword == "additionalProperties":
        message = f"{error.message} (not allowed by the schema)"
    else:
        message = f"expected {keyword} {_short(expected)}, received {_short(received)}"
    return Problem(path, message, keyword, expected, received)


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class ValidatorCache:
    """Compiled validators keyed by schema digest; compile happens at catalog load, not per call."""

    _compiled: dict[str, CompiledSchema] = field(default_factory=dict)

    def compile(self, schema: Any) -> CompiledSchema:
        digest = schema_digest(schema)
        compiled = self._compiled.get(digest)
        if compiled is None:
            compiled = _compile(schema, digest)
            self._compiled[digest] = compiled
        return compiled


def _compile(schema: Any, digest: str) -> CompiledSchema:
    if schema is True or schema == {}:
        return CompiledSchema(digest, Draft202012Validator({}), quick=_always_valid)
    if not isinstance(schema, (dict, bool)):
        return CompiledSchema(digest, None, f"a schema must be an object or a boolean, got {type(schema).__name__}")
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        return CompiledSchema(digest, cls(schema), quick=quick_checker(schema, cls))
    except SchemaError as exc:
        return CompiledSchema(digest, None, f"{exc.message} at {_json_path(exc.absolute_path)}")
    except Exception as exc:  # unknown $schema URI and similar
        return CompiledSchema(digest, None, str(exc))


def _always_valid(_: Any) -> bool:
    return True
