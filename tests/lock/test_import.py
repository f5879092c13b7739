"""`mcpgw lock import` of Claude Desktop, VS Code and MCP-Bench files, then a real `mcpgw serve` of the result."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from mcpgw.lock.config import load_config
from tests.conftest import MISBEHAVING, start_gateway, stop_gateway
from tests.lock.helpers import CATALOG_SERVER, call_tool, catalog_command, list_tools, mcpgw, write_tools

EXISTING = """# my servers, hand-written
version: 1
separator: "__"
default_profile: base

servers:
  # the first one
  base_echo:
    command: {python}
    args: [{misbehaving}]

profiles:
  base: [base_echo]   # keep this comment
"""


@pytest.fixture
def tools(tmp_path: Path) -> tuple[Path, Path]:
    one = write_tools(
        tmp_path / "one.json",
        [
            {
                "name": "lookup",
                "description": "look up",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
    )
    two = write_tools(
        tmp_path / "two.json",
        [
            {"name": "add", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}},
            {"name": "sub", "inputSchema": {"type": "object"}},
        ],
    )
    return one, two


def serve_and_list(tmp_path: Path, lock: Path, profile: str) -> list[str]:
    gateway = start_gateway(tmp_path / "gw", lock.read_text(), "--profile", profile, "--mode", "live", settle=60)
    try:
        names = list_tools(gateway.url)
        assert all(s["state"] == "ready" for s in gateway.status()["servers"].values()), gateway.status()
        return names
    finally:
        stop_gateway(gateway)


def test_claude_desktop_file_to_a_new_lock_then_served(tmp_path, tools, capsys, monkeypatch):
    one, two = tools
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "Echo Server": {"command": MISBEHAVING[0], "args": [MISBEHAVING[1]]},
                    "lookup": {
                        "command": catalog_command(one)[0],
                        "args": catalog_command(one)[1:],
                        "env": {"LOOKUP_API_KEY": "sk-live-secret-123", "LOOKUP_MODE": "test"},
                    },
                    "calc": {"command": catalog_command(two)[0], "args": catalog_command(two)[1:], "disabled": False},
                }
            },
            indent=2,
        )
    )
    lock = tmp_path / "servers.lock.yaml"
    assert mcpgw("lock", "import", str(source), "--lock", str(lock), "--profile", "mine") == 0
    out = capsys.readouterr().out
    assert "created" in out and "export LOOKUP_API_KEY" in out and "ignored key(s) ['disabled']" in out
    text = lock.read_text()
    assert "sk-live-secret-123" not in text  # a secret never lands in the lock file
    config = load_config(lock)
    assert list(config.servers) == ["echo_server", "lookup", "calc"]
    assert config.profiles == {"mine": ("echo_server", "lookup", "calc")} and config.default_profile == "mine"
    assert config.servers["echo_server"].title == "Echo Server"
    assert config.servers["lookup"].env_values == {"LOOKUP_API_KEY": "${LOOKUP_API_KEY}", "LOOKUP_MODE": "test"}
    assert config.servers["lookup"].env_required == ("LOOKUP_API_KEY",)

    monkeypatch.setenv("LOOKUP_API_KEY", "sk-from-env")
    names = serve_and_list(tmp_path, lock, "mine")
    assert {"echo_server__echo", "lookup__lookup", "calc__add", "calc__sub"} <= set(names)


def test_vscode_file_appended_to_an_existing_lock_keeps_its_comments(tmp_path, tools, capsys, monkeypatch):
    one, two = tools
    lock = tmp_path / "servers.lock.yaml"
    before = EXISTING.format(python=json.dumps(MISBEHAVING[0]), misbehaving=json.dumps(MISBEHAVING[1]))
    lock.write_text(before)
    source = tmp_path / "mcp.json"
    source.write_text(
        json.dumps(
            {
                "inputs": [{"id": "calc-token", "type": "promptString", "password": True}],
                "servers": {
                    "lookup": {
                        "type": "stdio",
                        "command": catalog_command(one)[0],
                        "args": catalog_command(one)[1:],
                        "env": {"HOME_DIR": "${env:HOME}"},
                    },
                    "calc": {
                        "type": "stdio",
                        "command": catalog_command(two)[0],
                        "args": catalog_command(two)[1:],
                        "env": {"CALC_TOKEN": "${input:calc-token}"},
                    },
                    "misbehaving": {"command": MISBEHAVING[0], "args": [MISBEHAVING[1]]},
                },
            }
        )
    )
    assert mcpgw("lock", "import", str(source), "--lock", str(lock), "--profile", "base") == 0
    assert "environment variable CALC_TOKEN" in capsys.readouterr().out
    text = lock.read_text()
    assert text.startswith(before.split("profiles:")[0])  # everything before the profiles is untouched
    assert "  base: [base_echo, lookup, calc, misbehaving]   # keep this comment\n" in text
    assert "# imported from mcp.json (VS Code)" in text
    config = load_config(lock)
    assert config.servers["calc"].env_values == {"CALC_TOKEN": "${CALC_TOKEN}"}
    assert config.servers["lookup"].env_values == {"HOME_DIR": "${HOME}"}

    monkeypatch.setenv("CALC_TOKEN", "t0ken")
    names = serve_and_list(tmp_path, lock, "base")
    assert {"base_echo__echo", "lookup__lookup", "calc__add", "misbehaving__echo"} <= set(names)


def test_mcpbench_commands_json_resolves_cwd_like_mcpbench(tmp_path, tools, capsys, monkeypatch):
    one, two = tools
    servers_dir = tmp_path / "mcp_servers"
    for name, tools_file in (("lookup-mcp", one), ("calc-mcp", two)):
        (servers_dir / name).mkdir(parents=True)
        shutil.copy(CATALOG_SERVER, servers_dir / name / "server.py")
        shutil.copy(tools_file, servers_dir / name / "tools.json")
    python = shlex.quote(sys.executable)
    commands = servers_dir / "commands.json"
    commands.write_text(
        json.dumps(
            {
                "Lookup Service": {"cmd": f"{python} server.py tools.json", "env": [], "cwd": "../lookup-mcp"},
                "Calc": {"cmd": f"{python} server.py tools.json", "env": ["CALC_API_KEY"], "cwd": "../calc-mcp"},
                "Misbehaving": {"cmd": f"{python} {shlex.quote(MISBEHAVING[1])}", "env": []},
            },
            indent=2,
        )
    )
    lock = tmp_path / "servers.lock.yaml"
    assert mcpgw("lock", "import", str(commands), "--lock", str(lock), "--profile", "bench") == 0
    config = load_config(lock)
    assert list(config.servers) == ["lookup_service", "calc", "misbehaving"]
    assert config.servers["lookup_service"].cwd == str(servers_dir / "lookup-mcp")
    assert config.servers["lookup_service"].args == ("server.py", "tools.json")
    assert config.servers["calc"].env_required == ("CALC_API_KEY",)

    monkeypatch.setenv("CALC_API_KEY", "k")
    gateway = start_gateway(tmp_path / "gw", lock.read_text(), "--profile", "bench", "--mode", "live", settle=60)
    try:
        assert {"lookup_service__lookup", "calc__add", "calc__sub", "misbehaving__echo"} <= set(list_tools(gateway.url))
        assert json.loads(call_tool(gateway.url, "calc__add", {"a": 2})) == {"tool": "add", "arguments": {"a": 2}}
    finally:
        stop_gateway(gateway)


def test_mcpbench_http_entry_and_pins_from_commands(tmp_path, capsys):
    source = tmp_path / "commands.json"
    source.write_text(
        json.dumps(
            {
                "Google Maps": {
                    "cmd": "node dist/cli.js --port 3001",
                    "env": ["GOOGLE_MAPS_API_KEY"],
                    "cwd": "../mcp-google-map",
                    "transport": "http",
                    "port": 3001,
                    "endpoint": "/mcp",
                },
                "Time": {"cmd": "uvx --from mcp-server-time==2026.10.19 mcp-server-time", "env": []},
                "Everything": {"cmd": "npx -y @modelcontextprotocol/server-everything@2026.8.31 stdio", "env": []},
                "Floating": {"cmd": "npx -y some-mcp-server", "env": []},
            }
        )
    )
    lock = tmp_path / "l.yaml"
    assert mcpgw("lock", "import", str(source), "--lock", str(lock)) == 0
    out = capsys.readouterr().out
    assert "does not exist here" in out and "not pinned" in out
    config = load_config(lock)
    maps = config.servers["google_maps"]
    # Its command takes the port: a free loopback one is picked at each start, not MCP-Bench's fixed 3001.
    assert (maps.transport, maps.url, maps.command) == ("http", "http://127.0.0.1:${FREE_PORT}/mcp", "node")
    assert maps.args == ("dist/cli.js", "--port", "${FREE_PORT}")
    assert config.servers["time"].pin.package == "mcp-server-time" and config.servers["time"].pin.registry == "pypi"
    assert (
        config.servers["everything"].pin.version == "2026.8.31" and config.servers["everything"].pin.registry == "npm"
    )
    assert config.servers["floating"].pin is None
    assert config.profiles == {}


@pytest.mark.parametrize(
    "content, words",
    [
        ({"mcpServers": {"good": {"command": "x"}, "broken": {"args": ["a"]}}}, "server 'broken': needs a 'command'"),
        (
            {"mcpServers": {"broken": {"command": "x", "env": {"A": ["list"]}}}},
            "server 'broken': env 'A' must be a string",
        ),
        ({"A": {"cmd": "python a.py"}, "B": {"command": "python"}}, "server 'B': expected {\"cmd\""),
        ({"A": {"cmd": "python 'unclosed"}}, "server 'A': cannot split 'cmd'"),
        ({"A": {"cmd": "python a.py", "env": "KEY"}}, "server 'A': 'env' must be a list"),
        ({"A": {"cmd": "node x", "transport": "http"}}, "server 'A': an http server needs a 'port'"),
        ({"A": {"cmd": ""}}, "server 'A': 'cmd' must be a non-empty"),
        ({"A": {"cmd": "x"}, "a": {"cmd": "y"}}, "servers 'A' and 'a' both become id 'a'"),
        ({"tools": [1, 2]}, "unrecognised shape"),
    ],
)
def test_bad_entries_are_named(tmp_path, capsys, content, words):
    source = tmp_path / "in.json"
    source.write_text(json.dumps(content, indent=2))
    lock = tmp_path / "servers.lock.yaml"
    assert mcpgw("lock", "import", str(source), "--lock", str(lock)) == 2
    err = capsys.readouterr().err
    assert words in err, err
    assert not lock.exists()


def test_invalid_json_names_the_line(tmp_path, capsys):
    source = tmp_path / "in.json"
    source.write_text('{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n')
    assert mcpgw("lock", "import", str(source), "--lock", str(tmp_path / "l.yaml")) == 2
    assert f"{source}:3: invalid JSON" in capsys.readouterr().err


def test_id_collision_names_both_entries_and_writes_nothing(tmp_path, capsys):
    lock = tmp_path / "servers.lock.yaml"
    before = EXISTING.format(python="python", misbehaving="x.py")
    lock.write_text(before)
    source = tmp_path / "claude.json"
    source.write_text(json.dumps({"mcpServers": {"ok": {"command": "x"}, "Base Echo": {"command": "y"}}}, indent=2))
    assert mcpgw("lock", "import", str(source), "--lock", str(lock)) == 2
    err = capsys.readouterr().err
    assert "server 'Base Echo' becomes id 'base_echo', which collides with server 'base_echo'" in err
    assert f"{lock}:8" in err and f"{source}:6" in err
    assert lock.read_text() == before


def test_importing_into_a_json_config_is_refused(tmp_path, capsys):
    target = tmp_path / "claude.json"
    target.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}}}))
    source = tmp_path / "more.json"
    source.write_text(json.dumps({"mcpServers": {"b": {"command": "y"}}}))
    assert mcpgw("lock", "import", str(source), "--lock", str(target)) == 2
    assert "not a lock file" in capsys.readouterr().err


def test_lock_fields_of_a_json_config_are_carried_into_the_lock(tmp_path, capsys):
    # Issue 44.1: the x-mcpgw fields (and the same names at top level) reach the lock `lock import` writes.
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "Calculator": {
                        "command": "python",
                        "args": ["calc.py"],
                        "flags": ["stateless"],
                        "x-mcpgw": {
                            "state_group": "maths",
                            "timeout": 5,
                            "hide_tools": ["debug"],
                            "notes": "pure functions",
                        },
                    },
                }
            },
            indent=2,
        )
    )
    lock = tmp_path / "servers.lock.yaml"
    assert mcpgw("lock", "import", str(source), "--lock", str(lock)) == 0
    out = capsys.readouterr().out
    assert "lock field(s) ['notes'] not carried over" in out and "ignored key(s)" not in out
    calc = load_config(lock).servers["calculator"]
    assert (calc.flags, calc.state_group, calc.timeout, calc.hide_tools) == (
        frozenset({"stateless"}),
        "maths",
        5.0,
        frozenset({"debug"}),
    )
