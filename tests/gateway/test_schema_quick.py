"""The quick predicate agrees with jsonschema wherever it exists, and steps aside everywhere else.

Schemas are generated from the keywords it covers (nested), instances both at random (any JSON,
with the awkward values: 1.0, True, -0.0, big ints) and from the schema itself (hypothesis-jsonschema,
so valid instances are common); for every pair the predicate's yes must be jsonschema's yes, and (it is
exact within what it covers) its no jsonschema's no.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator

from mcpgw.gateway.tools.schema_quick import quick_checker
from mcpgw.gateway.tools.validation import ValidatorCache

NAMES = st.sampled_from(["a", "b", "message", "n"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])

AWKWARD = [None, True, False, 0, 1, -1, 2, 1.0, -0.0, 2.5, -2.5, 1e300, 10**30, "", "x", "y", "message", "xyzw"]
scalars = st.one_of(
    st.sampled_from(AWKWARD), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=4)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=3)),
    max_leaves=8,
)


def schemas() -> st.SearchStrategy:
    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        keyword = st.fixed_dictionaries(
            {},
            optional={
                "type": st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
                "properties": st.dictionaries(NAMES, inner, max_size=3),
                "required": st.lists(NAMES, max_size=2, unique=True),
                "additionalProperties": st.one_of(st.booleans(), inner),
                "items": inner,
                "enum": st.lists(st.sampled_from(["x", "y", "message", ""]), min_size=1, max_size=3, unique=True),
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(0, 2),
                "minimum": st.one_of(st.integers(-2, 2), st.floats(-2, 2)),
                "maximum": st.one_of(st.integers(-2, 2), st.floats(-2, 2)),
                "description": st.text(max_size=3),
                "format": st.sampled_from(["date-time", "uri", "email"]),
                "x-vendor": st.integers(),  # no keyword of the draft: ignored by jsonschema, and by the predicate
            },
        )
        return keyword

    return st.recursive(
        st.one_of(st.booleans(), st.just({}), st.builds(lambda t: {"type": t}, TYPES)), extend, max_leaves=6
    )


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=schemas(), instance=json_values)
def test_the_predicate_is_jsonschema_on_random_instances(schema, instance):
    quick = quick_checker(schema, Draft202012Validator)
    assert quick is not None, schema  # every generated schema is within what it covers
    assert quick(instance) == Draft202012Validator(schema).is_valid(instance), (schema, instance)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), schema=schemas())
def test_the_predicate_is_jsonschema_on_instances_drawn_from_the_schema(data, schema):
    try:
        instance = data.draw(from_schema(schema))
    except Exception:  # noqa: BLE001 - a schema nothing satisfies (hypothesis-jsonschema says so by raising)
        return
    quick = quick_checker(schema, Draft7Validator)
    assert quick(instance) == Draft7Validator(schema).is_valid(instance), (schema, instance)


def test_awkward_values_as_jsonschema_takes_them():
    integer = quick_checker({"type": "integer"}, Draft202012Validator)
    number = quick_checker({"type": "number", "minimum": 0}, Draft202012Validator)
    assert integer(1.0) and integer(10**30) and not integer(True) and not integer(1.5)
    bound = quick_checker({"minimum": 0}, Draft202012Validator)
    assert number(0) and not number(False) and not number(-1) and bound("text") and bound(True)  # bounds: numbers only
    assert quick_checker({"type": "object", "required": ["a"]}, Draft202012Validator)([]) is False  # not an object
    assert quick_checker({"required": ["a"]}, Draft202012Validator)([]) is True  # no type: required ignores it


def test_what_it_does_not_cover_gets_no_predicate():
    for schema in (
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"anyOf": [{"type": "string"}]},
        {"pattern": "^a"},
        {"const": 1},
        {"enum": [1, True]},
        {"properties": {"a": {"oneOf": []}}},
        {"items": [{}]},
        {"exclusiveMinimum": 0},
        {"multipleOf": 2},
        {"not": {}},
    ):
        assert quick_checker(schema, Draft202012Validator) is None, schema
    assert quick_checker({"type": "integer"}, Draft4Validator) is None  # draft 4: 1.0 is no integer


def test_the_validator_cache_answers_with_it_and_still_explains_errors():
    compiled = ValidatorCache().compile({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert compiled.quick is not None
    assert compiled.check({"n": 3}).valid is True
    verdict = compiled.check({"n": "3"})
    assert verdict.valid is False and verdict.problems[0].path == "$.n"


SIMPLE = [{"type": t} for t in ("string", "integer", "number", "boolean", "null", "object", "array")] + [
    {"type": ["integer", "null"]},
    {"type": ["number", "string"]},
    {"minimum": 0},
    {"maximum": 1.5},
    {"minLength": 1},
    {"maxLength": 1},
    {"minItems": 1},
    {"maxItems": 0},
    {"enum": ["x", ""]},
    {"required": ["a"]},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"items": {"type": "boolean"}},
    {"additionalProperties": {"type": "null"}},
    True,
    False,
    {},
]
CONTAINERS = [[], [True], [1, "x"], {}, {"a": 1}, {"a": 1.0}, {"a": True}, {"b": None}, {"a": "x", "b": None}]


def test_every_awkward_value_against_every_simple_schema():
    for schema in SIMPLE:
        quick = quick_checker(schema, Draft202012Validator)
        for value in AWKWARD + CONTAINERS:
            assert quick(value) == Draft202012Validator(schema).is_valid(value), (schema, value)
