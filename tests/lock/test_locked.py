"""The `locked:` section: what refresh writes is exactly what check reads back."""

from __future__ import annotations

import pytest
import yaml

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.specs.server_spec import Pin, ServerSpec
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.lock.locked import catalog_digest, parse, render, snapshot

AWKWARD = {
    "type": "object",
    "description": "don't \"quote\" me: it's 'tricky' # not a comment\nsecond line\ttab",
    "properties": {
        "big": {"type": "number", "maximum": 1e20, "minimum": -1.5e-7},
        "name": {"type": "string", "enum": ["café", "日本", "yes", "null", "~"]},
        "nested": {"type": "object", "properties": {"x": {"type": ["integer", "null"], "default": None}}},
    },
    "required": ["name"],
}


def catalog(tools, version="1.2.3"):
    return ServerCatalog(
        {
            "protocolVersion": "2025-11-25",
            "serverInfo": {"name": "srv", "version": version},
            "capabilities": {"tools": {}},
        },
        tools=tools,
    )


def test_render_then_parse_round_trips_awkward_schemas_exactly():
    spec = ServerSpec("s", "stdio", "npx", ("-y", "@scope/pkg@2.0.1"), hide_tools=frozenset({"secret_tool"}))
    tools = [
        {"name": "odd: name with spaces", "description": "d", "inputSchema": AWKWARD},
        {"name": "plain", "inputSchema": {"type": "object"}},
        {"name": "secret_tool", "inputSchema": {}},
    ]
    locked = snapshot(spec, catalog(tools), "2026-01-01T00:00:00Z")
    assert locked.tool_count == 2 and "secret_tool" not in locked.tools
    assert locked.pinned == "@scope/pkg@2.0.1"  # what the command runs
    text = "servers:\n  s:\n" + render(locked, 4)
    data = yaml.safe_load(text)["servers"]["s"]["locked"]
    assert data["refreshed"] == "2026-01-01T00:00:00Z" and data["tool_count"] == 2
    back = parse("s", data, "t.yaml")
    assert back.same_as(locked)
    assert back.tools["odd: name with spaces"]["inputSchema"] == AWKWARD
    assert all(len(line) - len(line.lstrip()) >= 4 for line in render(locked, 4).splitlines())


def test_digest_covers_names_and_schemas_not_descriptions_or_order():
    a = {"x": {"description": "1", "inputSchema": {"type": "object"}}, "y": {"description": "2", "inputSchema": {}}}
    b = {"y": {"description": "other", "inputSchema": {}}, "x": {"description": "3", "inputSchema": {"type": "object"}}}
    assert catalog_digest(a) == catalog_digest(b)
    assert catalog_digest(a) != catalog_digest({**a, "x": {"inputSchema": {"type": "string"}}})


def test_pin_used_when_the_command_names_no_version():
    spec = ServerSpec("s", "stdio", "python", ("server.py",), pin=Pin(registry="pypi", package="srv", version="0.3"))
    assert snapshot(spec, catalog([]), None).pinned == "srv@0.3"
    assert snapshot(ServerSpec("s", "stdio", "python"), catalog([]), None).pinned is None


@pytest.mark.parametrize(
    "data, words",
    [
        ("text", "must be a mapping"),
        ({"catalog_digest": "x", "tools": []}, "tools must be a mapping"),
        ({"catalog_digest": "x", "tools": {"t": {"input": "{nope"}}}, "tools.t.input is not valid JSON"),
        ({"tools": {}}, "catalog_digest is missing"),
    ],
)
def test_bad_locked_data_names_the_server(data, words):
    with pytest.raises(ConfigError) as err:
        parse("srv", data, "l.yaml")
    assert "server 'srv': locked" in str(err.value) and words in str(err.value)
