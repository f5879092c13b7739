"""The tool catalog: MCP-Bench's available_tools shape, including entries MCP-Bench scores as non-compliant."""

import json

import pytest

from mcpgw.evaluator.catalog import read_catalog, schema_checks
from mcpgw.evaluator.errors import InputError


def test_broken_entries_do_not_refuse_the_catalog(tmp_path):
    # MCP-Bench scores calls to a null entry, or to a tool whose input_schema is a list or a string,
    # non-compliant, and every other call normally; the catalog is read, not refused.
    path = tmp_path / "tools.json"
    path.write_text(
        json.dumps(
            {
                "Search:find": {"server": "Search", "description": "find", "input_schema": {"type": "object"}},
                "Search:null": None,
                "Search:list": {"server": "Search", "input_schema": ["type", "object"]},
                "Search:text": {"server": "Search", "input_schema": "object"},
                "Search:empty": {"server": "Search", "input_schema": []},
            }
        )
    )
    tools = {t["exposed_name"]: t for t in read_catalog(path)}
    assert set(tools) == {"Search:find", "Search:null", "Search:list", "Search:text", "Search:empty"}
    assert tools["Search:null"]["tool"] == "null" and "null" in tools["Search:null"]["unusable"]
    checks = schema_checks(list(tools.values()))
    verdict = {
        name: checks.verdict(t["input_schema_digest"], {}) for name, t in tools.items() if t.get("input_schema_digest")
    }
    assert verdict == {
        "Search:find": True,
        "Search:null": False,
        "Search:list": False,
        "Search:text": False,
        "Search:empty": True,
    }  # [] is falsy: MCP-Bench passes it without validating


def test_other_shapes_still_name_the_bad_field(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"weather": 5}))
    with pytest.raises(InputError, match="'weather'.*expected a tool or a list of tools"):
        read_catalog(path)
