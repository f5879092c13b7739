"""A quick yes for arguments that are plainly valid, before jsonschema is asked.

jsonschema's `is_valid` costs 20-30 us even for `{"message": "hello"}` against a one-property schema (it
builds and descends a validator per keyword): a tenth of a replayed call's CPU. Most tool schemas use a
handful of keywords (type, properties, required, additionalProperties, items, string enums, lengths,
bounds), so for those this module compiles a plain Python predicate once per schema.

The predicate only ever says "certainly valid": False means "ask jsonschema", which then decides the
verdict and its errors as before. A schema using anything else (`$ref`, combinators, patterns, `const`,
formats asserted, enums of non-strings, drafts before 6, ...) gets no predicate at all. Within what it
covers it follows jsonschema's rules exactly (tests/gateway/test_schema_quick.py compares both on
generated schemas and instances): an integer is an int or a float with no fraction (drafts 6+), a bool
is neither a number nor an integer, `required`/`properties` say nothing about non-objects.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any

from jsonschema import Draft6Validator, Draft7Validator, Draft201909Validator, Draft202012Validator

Check = Callable[[Any], bool]

_DRAFTS = (Draft6Validator, Draft7Validator, Draft201909Validator, Draft202012Validator)  # integer: 1.0 counts
_NOTES = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$schema",
        "$comment",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)  # annotations: no assertion (formats are not checked, gateway.tools.validation)
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
    }
)


class Unsupported(Exception):
    pass


def quick_checker(schema: Any, validator_class: type[Any]) -> Check | None:
    """A predicate that is True only for instances `validator_class(schema)` finds valid; None when the schema
    uses anything it does not cover."""
    if validator_class not in _DRAFTS:
        return None
    try:
        return _Compiler(validator_class.VALIDATORS).compile(schema)
    except Unsupported:
        return None


class _Compiler:
    def __init__(self, asserted: Any) -> None:
        self.asserted = asserted  # the draft's keywords; any other key is ignored by jsonschema, and here

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict) or any(
            k in self.asserted and k not in _KEYWORDS and k not in _NOTES for k in schema
        ):
            raise Unsupported
        return self._checks(schema)

    def _checks(self, schema: dict[str, Any]) -> Check:
        checks: list[Check] = []
        if "type" in schema:
            checks.append(_type_check(schema["type"]))
        if "enum" in schema:
            choices = schema["enum"]
            if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
                raise Unsupported  # jsonschema's enum equality tells 1 from True and 1 from 1.0: not redone here
            allowed = frozenset(choices)
            checks.append(lambda x: isinstance(x, str) and x in allowed)
        checks += _object_checks(schema, self.compile)
        checks += _bound_checks(schema)
        if "items" in schema:
            item = self.compile(schema["items"])
            checks.append(lambda x: not isinstance(x, list) or all(item(v) for v in x))
        return _all(checks) if checks else _always


def _object_checks(schema: dict[str, Any], compile: Callable[[Any], Check]) -> list[Check]:
    checks: list[Check] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise Unsupported
    compiled = {name: compile(sub) for name, sub in properties.items()}
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise Unsupported
    extra = schema.get("additionalProperties", True)
    extra_check = compile(extra)
    names = tuple(required)
    if compiled or extra is not True:  # `required` and the members' checks in one function: one call, not two

        def members(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            for name in names:
                if name not in x:
                    return False
            for key, value in x.items():
                check = compiled.get(key)
                if check is None:
                    check = extra_check
                if not check(value):
                    return False
            return True

        checks.append(members)
    elif names:
        checks.append(lambda x: not isinstance(x, dict) or all(n in x for n in names))
    return checks


def _all(checks: list[Check]) -> Check:
    """True when every check is: spelled out for the usual two or three (a generator costs more than they do)."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda x: first(x) and second(x)
    if len(checks) == 3:
        first, second, third = checks
        return lambda x: first(x) and second(x) and third(x)
    return lambda x: all(check(x) for check in checks)


def _bound_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    for keyword, kind, compare in (
        ("minLength", str, _at_least),
        ("maxLength", str, _at_most),
        ("minItems", list, _at_least),
        ("maxItems", list, _at_most),
    ):
        if keyword in schema:
            limit = schema[keyword]
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise Unsupported
            checks.append(_sized(kind, compare, limit))
    for keyword, compare in (("minimum", _at_least), ("maximum", _at_most)):
        if keyword in schema:
            limit = schema[keyword]
            if not _is_number(limit):
                raise Unsupported
            checks.append(_bounded(compare, limit))
    return checks


def _sized(kind: type[Sized], compare: Callable[[int, Any], bool], limit: int) -> Check:
    return lambda x: not isinstance(x, kind) or compare(len(x), limit)


def _bounded(compare: Callable[[Any, Any], bool], limit: Any) -> Check:
    return lambda x: not _is_number(x) or compare(x, limit)


def _at_least(value: Any, limit: Any) -> bool:
    verdict: bool = value >= limit
    return verdict


def _at_most(value: Any, limit: Any) -> bool:
    verdict: bool = value <= limit
    return verdict


def _type_check(declared: Any) -> Check:
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not all(n in _TYPES for n in names):
        raise Unsupported
    tests = [_TYPES[n] for n in names]
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(test(x) for test in tests)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


_TYPES: dict[str, Check] = {
    "string": lambda x: isinstance(x, str),
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": _is_integer,
}


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False
