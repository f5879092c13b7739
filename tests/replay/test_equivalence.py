"""`equivalent` is sound: a call is answered by the recording of another only where the tool's schema says plainly
that both ask the same thing (cassette.equivalence). End to end through real gateways at the bottom."""

from __future__ import annotations

import json
import sys

import pytest

from mcpgw.cassette.equivalence import has_defaults, normalise
from mcpgw.recorder.calllog import iter_calls
from mcpgw.replay.cassette_upstream import CassetteUpstream
from tests.conftest import FIXTURES, start_gateway, stop_gateway
from tests.replay.test_answer_sources import ask, catalog, entries, text
from tests.replay.test_record_replay import calls


def tool(schema: dict) -> dict:
    return {"name": "t", "description": "a tool", "annotations": {"readOnlyHint": True}, "inputSchema": schema}


def sources(schema: dict, recorded: dict, asked: dict) -> list[str]:
    """The labels of the recorded call asked again, then of the new call, on a recording of `recorded` alone."""
    upstream = CassetteUpstream(
        "s", catalog(tool(schema)), entries("s", False, [("t", recorded, text("recorded"))]), tracked=False
    )
    return [source for source, _ in ask(upstream, [("t", recorded), ("t", asked)])]


A_OR_B = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}, "b": {"type": "string"}}}

# (schema, recorded, new): each new call is valid, its recorded counterpart is not (or the schema makes the
# default's meaning depend on what else is there); today's code answered each new call `equivalent`.
UNSOUND = {
    "oneOf": ({**A_OR_B, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"a": "x", "b": "y"}, {"b": "y"}),
    "if-then": (
        {
            "type": "object",
            "properties": {"mode": {"type": "string", "default": "fast"}, "speed": {"type": "number"}},
            "if": {"properties": {"mode": {"const": "fast"}}, "required": ["mode"]},
            "then": {"required": ["speed"]},
        },
        {"mode": "fast"},
        {},
    ),
    "maxProperties": ({**A_OR_B, "maxProperties": 1}, {"a": "x", "b": "y"}, {"b": "y"}),
    "dependentRequired": (
        {**A_OR_B, "properties": {**A_OR_B["properties"], "c": {"type": "string"}}, "dependentRequired": {"a": ["c"]}},
        {"a": "x", "b": "y"},
        {"b": "y"},
    ),
    "default-fails-its-type": (
        {"type": "object", "properties": {"n": {"type": "integer", "default": "abc"}}},
        {"n": "abc"},
        {},
    ),
}


@pytest.mark.parametrize("case", sorted(UNSOUND))
def test_a_valid_call_is_never_answered_by_the_recording_of_a_different_call(case):
    schema, recorded, asked = UNSOUND[case]
    assert sources(schema, recorded, asked) == ["recorded", "missed"]


def test_a_recorded_call_that_is_valid_still_does_not_make_a_conditional_level_equivalent():
    # Both calls valid under oneOf, yet which branch holds depends on what is present: that level is not normalised.
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "default": "x"}, "b": {"type": "string"}, "c": {"type": "string"}},
        "oneOf": [{"required": ["b"]}, {"required": ["c"]}],
    }
    assert sources(schema, {"a": "x", "b": "y"}, {"b": "y"}) == ["recorded", "missed"]
    assert not has_defaults(schema) and normalise({"b": "y"}, schema) == {"b": "y"}


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("anyOf", [{"required": ["b"]}]),
        ("not", {"required": ["c"]}),
        ("minProperties", 1),
        ("dependentSchemas", {"b": {"required": ["b"]}}),
        ("enum", [{"b": "y"}]),
        ("$ref", "#/$defs/x"),
    ],
)
def test_no_level_is_normalised_whose_rules_depend_on_what_is_present(keyword, value):
    schema = {**A_OR_B, keyword: value, "$defs": {"x": {"type": "object"}}}
    assert not has_defaults(schema) and normalise({"b": "y"}, schema) == {"b": "y"}
    # nor anything below such a level
    nested = {"type": "object", "properties": {"o": schema}}
    assert not has_defaults(nested) and normalise({"o": {"b": "y"}}, nested) == {"o": {"b": "y"}}


def test_a_default_that_fails_its_own_schema_is_never_filled():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "default": "abc"},
            "m": {"type": "integer", "minimum": 5, "default": 7},
            "u": {"$ref": "#/$defs/unit", "default": "ft"},
            "v": {"$ref": "#/$defs/unit", "default": "cm"},
        },
        "$defs": {"unit": {"enum": ["cm", "in"]}},
    }
    # n's default is not an integer and u's is not a unit; m's and v's hold (v's checked through its $ref)
    assert normalise({}, schema) == {"m": 7, "v": "cm"}


def test_a_new_call_that_is_itself_invalid_is_never_equivalent():
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "default": "x"}}}
    # the server receives no `a` at all: its schema says it refuses that
    assert sources(schema, {"a": "x"}, {}) == ["recorded", "missed"]


def test_a_null_default_on_a_nullable_property_is_filled_and_on_a_non_nullable_one_is_not():
    # FastMCP's `x: str | None = None`: absence means null, the server receives None either way.
    nullable = {
        "type": "object",
        "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
    }
    assert sources(nullable, {"x": None}, {}) == ["recorded", "equivalent"]
    assert sources(nullable, {}, {"x": None}) == ["recorded", "equivalent"]
    # Pydantic's `x: str = None`: null is not a string, so `{"x": null}` is invalid and absence means nothing known.
    strict = {"type": "object", "properties": {"x": {"type": "string", "default": None}}}
    assert not has_defaults(strict) and normalise({}, strict) == {}
    assert sources(strict, {}, {"x": None}) == ["recorded", "missed"]


def test_plain_defaults_stay_equivalent():
    schema = {
        "type": "object",
        "required": ["q"],
        "additionalProperties": False,
        "properties": {
            "q": {"type": "string"},
            "unit": {"type": "string", "default": "cm"},
            "rows": {
                "type": "array",
                "items": {"type": "object", "properties": {"w": {"type": "integer", "default": 1}}},
            },
        },
    }
    assert sources(schema, {"q": "z"}, {"q": "z", "unit": "cm"}) == ["recorded", "equivalent"]
    assert sources(schema, {"q": "z", "rows": [{}]}, {"q": "z", "unit": "cm", "rows": [{"w": 1}]}) == [
        "recorded",
        "equivalent",
    ]
    assert sources(schema, {"q": "z"}, {"q": "z", "unit": "in"}) == ["recorded", "missed"]


# -- end to end ----------------------------------------------------------------------------------------------

CONFIG = f"""version: 1
servers:
  cs:
    command: {json.dumps(sys.executable)}
    args: [{json.dumps(str(FIXTURES / "conditional_schema_server.py"))}]
    flags: [stateless]
"""


def test_a_new_call_valid_where_the_recorded_one_was_not_is_a_miss_through_a_real_gateway(tmp_path):
    recorder = start_gateway(tmp_path / "rec", CONFIG, "--mode", "record", "--cassette", "rec")
    try:
        # `{"a": "x", "b": "y"}` matches both branches of pick's oneOf: invalid, forwarded (audit), recorded
        recorded = calls(recorder, [("cs__pick", {"a": "x", "b": "y"}), ("cs__plain", {"q": "z"})])
    finally:
        stop_gateway(recorder)
    assert recorded[0]["content"][0]["text"] == 'pick received {"a": "x", "b": "y"}'

    player = start_gateway(
        tmp_path / "play",
        CONFIG,
        "--mode",
        "replay",
        "--cassette",
        str(recorder.cassettes / "rec"),
        "--log-cassette",
        "log",
    )
    try:
        new_pick, new_plain = calls(player, [("cs__pick", {"b": "y"}), ("cs__plain", {"q": "z", "unit": "cm"})])
    finally:
        stop_gateway(player)
    assert "error" in new_pick and "replay miss" in new_pick["error"]  # not the answer of the other call
    assert new_plain["content"][0]["text"] == 'plain received {"q": "z"}'  # a plain default still is equivalent
    log = list(iter_calls(player.cassettes / "log"))
    assert [(r["tool"], r["source"]) for r in log] == [("pick", "missed"), ("plain", "equivalent")]
