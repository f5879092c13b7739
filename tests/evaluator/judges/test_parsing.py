import pytest

from mcpgw.evaluator.judges.parsing import extract_object, number_in, parse_pass_fail


def test_extract_object_from_noisy_text():
    assert extract_object('Sure!\n```json\n{"a": 1, "b": "x}"}\n```\nDone.') == {"a": 1, "b": "x}"}
    assert extract_object('{"a": [1, 2,], "b": 3,}') == {"a": [1, 2], "b": 3}  # trailing commas
    assert extract_object('I think {this} is not JSON, but {"ok": true} is') == {"ok": True}
    assert extract_object("no braces here") is None and extract_object("") is None and extract_object(None) is None
    assert extract_object('["a list", {"inner": 1}]') == {"inner": 1}


@pytest.mark.parametrize(
    "text, verdict",
    [
        ('{"reasoning": "has the data", "verdict": "pass"}', True),
        ('{"verdict": "FAIL"}', False),
        ('{"result": true}', True),
        ('{"Decision": "Passed."}', True),
        ("The answer gives the live price. Final verdict: PASS", True),
        ("It passes on format but the data is wrong, so: FAIL", False),
        ("I cannot decide.", None),
        ('{"verdict": "maybe"}', None),
    ],
)
def test_pass_fail(text, verdict):
    assert parse_pass_fail(text)[0] is verdict


def test_reason_is_kept():
    assert parse_pass_fail('{"reasoning": "carries the fare", "verdict": "pass"}') == (True, "carries the fare")


def test_number_in_range():
    obj = {"a": 7, "b": "8.5", "c": 11, "d": True, "e": "high"}
    assert number_in(obj, "a", 0, 10) == 7.0 and number_in(obj, "b", 0, 10) == 8.5
    assert number_in(obj, "c", 0, 10) is None and number_in(obj, "d", 0, 10) is None
    assert number_in(obj, "e", 0, 10) is None and number_in(obj, "zz", 0, 10) is None
