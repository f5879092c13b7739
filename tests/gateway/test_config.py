import json
from pathlib import Path

import pytest

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.lock.config import load_config, parse_config

GOOD = """version: 1
separator: "__"
default_profile: local
servers:
  time:
    command: uvx
    args: [--from, "mcp-server-time==2026.10.19", mcp-server-time]
    pin: {registry: pypi, package: mcp-server-time, version: "2026.10.19"}
    flags: [offline, nondeterministic]
    timeout: 5
  maps:
    title: Google Maps
    transport: http
    url: http://127.0.0.1:3001/mcp
    headers: {Authorization: "Bearer ${MAPS_KEY}"}
    env: [GOOGLE_MAPS_API_KEY]
    hide_tools: [geocode]
profiles:
  local: [time]
  all: [time, maps]
"""


def test_lock_file_loads():
    config = parse_config(GOOD, "servers.lock.yaml")
    assert [s.id for s in config.select()] == ["time"]
    assert [s.id for s in config.select("all")] == ["time", "maps"]
    maps = config.servers["maps"]
    assert maps.transport == "http" and maps.display_name == "Google Maps"
    assert maps.env_required == ("GOOGLE_MAPS_API_KEY",) and maps.hide_tools == {"geocode"}
    assert config.servers["time"].timeout == 5 and config.servers["time"].offline


@pytest.mark.parametrize(
    "change, line, words",
    [
        (("    timeout: 5", "    timeout: -1"), 10, "timeout must be a positive"),
        (("    timeout: 5", "    timeout: .inf"), 10, "timeout must be a positive, finite number"),
        (("    timeout: 5", "    timeout: .nan"), 10, "timeout must be a positive, finite number"),
        (("    flags: [offline, nondeterministic]", "    flags: [offline, fast]"), 9, "unknown flag"),
        (("  maps:", "  my__maps:"), 11, "may not contain the separator"),
        (("  all: [time, maps]", "  all: [time, nope]"), 20, "unknown server id"),
        (("    args: [", "    argz: ["), 7, "unknown key 'argz'"),
        (("version: 1", "version: 7"), 1, "unsupported lock format version 7"),
        (("    transport: http", "    transport: carrier-pigeon"), 13, "transport must be one of"),
        (("    command: uvx\n", ""), 5, "needs a 'command'"),
    ],
)
def test_broken_lock_names_the_line(change, line, words):
    with pytest.raises(ConfigError) as err:
        parse_config(GOOD.replace(*change), "servers.lock.yaml")
    assert err.value.line == line, err.value
    assert words in err.value.problem
    assert str(err.value).startswith(f"servers.lock.yaml:{line}: ")


def test_yaml_syntax_error_names_the_line():
    with pytest.raises(ConfigError) as err:
        parse_config(GOOD.replace("  local: [time]", "  local: [time"), "x.yaml")
    assert err.value.line is not None and "invalid YAML" in err.value.problem


def test_claude_desktop_config(tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "Unit Converter": {"command": "uvx", "args": ["unit-converter-mcp"], "env": {"TOKEN": "abc123"}},
                    "remote": {"type": "streamable-http", "url": "http://127.0.0.1:9000/mcp"},
                    "legacy-sse": {"url": "http://127.0.0.1:9001/sse", "type": "sse"},
                }
            },
            indent=2,
        )
    )
    config = load_config(path)
    assert set(config.servers) == {"unit_converter", "remote", "legacy-sse"}
    assert config.servers["unit_converter"].title == "Unit Converter"
    assert config.servers["unit_converter"].env_values == {"TOKEN": "abc123"}
    assert config.servers["remote"].transport == "http"
    assert config.servers["legacy-sse"].transport == "sse"


def test_vscode_shape_and_json_errors(tmp_path):
    config = parse_config(json.dumps({"servers": {"t": {"command": "x"}}}), "mcp.json")
    assert list(config.servers) == ["t"]
    with pytest.raises(ConfigError) as err:
        parse_config('{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}', "bad.json")
    assert err.value.line == 3 and "invalid JSON" in err.value.problem
    with pytest.raises(ConfigError) as err:
        parse_config('{\n  "mcpServers": {\n    "a": {"args": ["x"]}\n  }\n}', "bad.json")
    assert err.value.line == 3 and "needs a 'command'" in err.value.problem


def test_missing_file_and_unknown_profile(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="unknown profile 'x'"):
        parse_config(GOOD).select("x")


def test_the_default_lock_is_the_users_own_first_then_the_installed_one(tmp_path, monkeypatch):
    from mcpgw.lock.config import CHECKOUT_LOCK, SHIPPED_LOCK, default_lock

    monkeypatch.chdir(tmp_path)
    assert default_lock() in (SHIPPED_LOCK, CHECKOUT_LOCK)  # an empty folder: the lock installed with mcpgw
    (tmp_path / "servers.lock.yaml").write_text("version: 1\nservers: {}\n")
    assert default_lock() == Path("servers.lock.yaml")  # a lock of the user's own comes first


def test_mcp_servers_json_takes_lock_fields_and_warns_on_unknown_keys(caplog):
    """Issue 44.1: a JSON config can mark a server stateless (MCPEval's calculator), in `x-mcpgw` or at top level."""
    text = json.dumps(
        {
            "mcpServers": {
                "Calculator": {
                    "command": "python",
                    "args": ["calc.py"],
                    "flags": ["stateless"],
                    "x-mcpgw": {"state_group": "maths", "timeout": 5},
                },
                "notes": {"command": "x", "disabled": False, "flag": ["stateless"]},
            }
        },
        indent=2,
    )
    with caplog.at_level("WARNING", logger="mcpgw.lock.mcp_servers_json"):
        config = parse_config(text, "mcpeval.json")
    calc = config.servers["calculator"]
    assert calc.flags == frozenset({"stateless"}) and calc.state_group == "maths" and calc.timeout == 5.0
    assert calc.title == "Calculator"
    assert config.servers["notes"].flags == frozenset()
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1, warned  # 'disabled' is another client's key: not warned about
    assert warned[0].startswith("mcpeval.json:") and "server 'notes'" in warned[0] and "'flag'" in warned[0]


def test_mcp_servers_json_lock_fields_are_checked():
    with pytest.raises(ConfigError, match=r"unknown flag\(s\) \['statless'\]"):
        parse_config(json.dumps({"mcpServers": {"a": {"command": "x", "x-mcpgw": {"flags": ["statless"]}}}}), "c.json")
    with pytest.raises(ConfigError, match="x-mcpgw: unknown key 'flag'"):
        parse_config(json.dumps({"mcpServers": {"a": {"command": "x", "x-mcpgw": {"flag": ["stateless"]}}}}), "c.json")
    with pytest.raises(ConfigError, match="given twice, differently"):
        parse_config(
            json.dumps({"mcpServers": {"a": {"command": "x", "timeout": 3, "x-mcpgw": {"timeout": 4}}}}), "c.json"
        )
