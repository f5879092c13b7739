import pytest

from mcpgw.evaluator.schemas import SchemaChecks, compile_check, schema_digest

OBJ = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}


@pytest.mark.parametrize("schema", [None, {}, False])
def test_falsy_schema_passes_anything(schema):
    # MCP-Bench returns True before validating when `not input_schema` (even for the schema False).
    check, problem = compile_check(schema)
    assert check({"anything": 1}) and check("not even an object") and problem is None


def test_latest_draft_when_schema_declares_none():
    # prefixItems only exists from 2020-12: under it, [1, "x"] fails the second item.
    schema = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]}
    check, _ = compile_check(schema)
    assert check([1, 2]) and not check([1, "x"])


def test_declared_draft_is_used():
    # Draft 4 ignores prefixItems (unknown keyword) and has boolean exclusiveMaximum.
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "array",
        "prefixItems": [{"type": "integer"}],
    }
    check, _ = compile_check(schema)
    assert check(["x"])
    d4 = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": True}
    check4, problem = compile_check(d4)
    assert problem is None and check4(4) and not check4(5)
    # The same schema under 2020-12 is itself invalid (exclusiveMaximum must be a number): fails everything.
    check20, problem20 = compile_check({"maximum": 5, "exclusiveMaximum": True})
    assert problem20 and not check20(4)


def test_no_format_checking():
    check, _ = compile_check({"type": "string", "format": "email"})
    assert check("definitely not an email")


def test_invalid_schema_fails_every_call():
    check, problem = compile_check({"type": "no-such-type"})
    assert "invalid schema" in problem and not check({}) and not check(1)


def test_bad_regex_is_a_failure_not_a_crash():
    check, problem = compile_check({"type": "string", "pattern": "("})
    assert problem and "invalid schema" in problem and "'('" in problem  # said, not raised
    assert not any(check(value) for value in ("abc", "", "("))  # every call fails, even the "matching" one
    good, fine = compile_check({"type": "string", "pattern": "^a"})
    assert fine is None and good("abc") and not good("b")  # a good pattern is checked as usual


def test_checks_compile_once_per_digest():
    checks = SchemaChecks()
    digest = checks.add(OBJ)
    assert digest == schema_digest(dict(reversed(list(OBJ.items()))))  # key order does not matter
    first = checks.check_for(digest)
    assert checks.check_for(digest) is first
    assert first({"n": 2}) and not first({"n": 0}) and not first({})
    assert checks.check_for("unknown-digest") is None
    assert checks.complies(OBJ, {"n": 1}) and not checks.complies(OBJ, None)  # None arguments mean {}


def test_verdicts_are_memoised_but_exact():
    checks = SchemaChecks()
    digest = checks.add(OBJ)
    assert checks.verdict("nope", {"n": 1}) is None
    assert checks.verdict(digest, {"n": 1}) is True and checks.verdict(digest, {"n": 1}) is True
    assert checks.verdict(digest, {"n": 1.5}) is False and checks.verdict(digest, {"n": True}) is False
    assert checks.verdict(digest, {"n": "1"}) is False and checks.verdict(digest, None) is False
    assert len(checks._memo) == 5


def test_digest_is_the_recorded_format():
    # Call logs store these digests, so the function is a file format: sha256 of the canonical JSON
    # (sorted keys, no spaces, UTF-8 kept), first 16 hex digits. The literals were computed by hand:
    # sha256('{"properties":{"n":{"minimum":1,"type":"integer"}},"required":["n"],"type":"object"}').
    assert schema_digest(OBJ) == "2c4086320dce28f6"
    assert schema_digest({"d": "é"}) == "4b2d55d5a0a36402"  # sha256('{"d":"é"}'), not the \\u00e9 escape
