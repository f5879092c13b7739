from mcpgw.gateway.tools.validation import ValidatorCache, schema_digest

SCHEMA = {
    "type": "object",
    "properties": {
        "unit": {"enum": ["c", "f"]},
        "value": {"type": "number", "minimum": -273.15},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
    },
    "required": ["value"],
    "additionalProperties": False,
}


def test_valid_and_invalid_calls_name_path_keyword_expected_received():
    compiled = ValidatorCache().compile(SCHEMA)
    assert compiled.check({"value": 3, "unit": "c"}).valid is True
    verdict = compiled.check({"unit": "k", "value": -300, "tags": ["ok", "NO"], "extra": 1})
    found = {(p.path, p.keyword) for p in verdict.problems}
    assert found == {
        ("$.unit", "enum"),
        ("$.value", "minimum"),
        ("$.tags[1]", "pattern"),
        ("$", "additionalProperties"),
    }
    enum = next(p for p in verdict.problems if p.keyword == "enum")
    assert enum.expected == ["c", "f"] and enum.received == "k"
    missing = compiled.check({})
    assert missing.problems[0].path == "$.value" and missing.problems[0].keyword == "required"


def test_each_missing_required_property_is_named_once():
    compiled = ValidatorCache().compile(
        {
            "type": "object",
            "required": ["a", "b", "c"],
            "properties": {"inner": {"type": "object", "required": ["x", "y"]}},
        }
    )
    verdict = compiled.check({"b": 1, "inner": {}})
    said = sorted((p.path, p.message) for p in verdict.problems)
    assert said == [
        ("$.a", "required property 'a' is missing"),
        ("$.c", "required property 'c' is missing"),
        ("$.inner.x", "required property 'x' is missing"),
        ("$.inner.y", "required property 'y' is missing"),
    ]


def test_draft_follows_schema_and_format_is_not_checked():
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
    }
    compiled = ValidatorCache().compile(draft4)
    assert compiled.check({"n": 5}).valid is False  # draft-4 boolean exclusiveMaximum
    assert ValidatorCache().compile({"type": "string", "format": "email"}).check("not-an-email").valid is True


def test_invalid_schema_is_a_failure_and_empty_schema_passes():
    bad = ValidatorCache().compile({"type": "object", "properties": {"a": {"type": "nope"}}})
    verdict = bad.check({"a": 1})
    assert verdict.valid is False and verdict.schema_invalid
    assert ValidatorCache().compile({}).check({"anything": 1}).valid is True


def test_validators_are_compiled_once_per_schema():
    cache = ValidatorCache()
    assert cache.compile(dict(SCHEMA)) is cache.compile(dict(reversed(list(SCHEMA.items()))))
    assert schema_digest({"a": 1, "b": 2}) == schema_digest({"b": 2, "a": 1})
