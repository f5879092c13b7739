"""`mcpgw lock refresh` then `mcpgw lock check`, against a local server whose tools the test rewrites in between."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from mcpgw.lock.config import load_config
from tests.conftest import MISBEHAVING
from tests.lock.helpers import catalog_command, mcpgw, write_tools

TOOLS = [
    {
        "name": "convert",
        "description": "convert a value",
        "inputSchema": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "unit": {"type": "string", "enum": ["m", "km", "mi"]},
                "precision": {"type": "integer"},
            },
            "required": ["value", "unit"],
        },
    },
    {
        "name": "search",
        "description": "search 'things'",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
    {"name": "hidden", "inputSchema": {"type": "object"}},
]


@pytest.fixture
def setup(tmp_path: Path):
    tools_file = write_tools(tmp_path / "tools.json", TOOLS)
    command = catalog_command(tools_file)
    lock = tmp_path / "servers.lock.yaml"
    lock.write_text(f"""# test lock
version: 1
servers:
  cat:
    title: "Catalog"
    command: {json.dumps(command[0])}
    args: {json.dumps(command[1:])}
    hide_tools: [hidden]
    timeout: 5  # a comment refresh must keep
  echo:
    command: {json.dumps(MISBEHAVING[0])}
    args: {json.dumps([MISBEHAVING[1]])}
profiles:
  p: [cat]
  both: [cat, echo]
""")
    return lock, tools_file


def change(tools_file: Path, edit, version: str = "1.0") -> None:
    """Rewrite the server's tools: `edit` changes (or pops, or adds to) a name -> definition dict."""
    tools = {t["name"]: t for t in copy.deepcopy(TOOLS)}
    edit(tools)
    write_tools(tools_file, list(tools.values()), version)


def check_json(lock: Path, capsys, *extra: str) -> tuple[int, dict]:
    status = mcpgw("lock", "check", "--config", str(lock), "--profile", "p", "--timeout", "30", "--json", *extra)
    return status, json.loads(capsys.readouterr().out)


def refresh(lock: Path, capsys, profile: str = "p") -> int:
    status = mcpgw("lock", "refresh", "--config", str(lock), "--profile", profile, "--timeout", "30")
    capsys.readouterr()
    return status


def test_refresh_writes_locked_data_and_keeps_the_rest(setup, capsys):
    lock, _ = setup
    before = lock.read_text()
    assert refresh(lock, capsys) == 0
    text = lock.read_text()
    assert text.startswith(before.split("  echo:")[0].rstrip("\n"))  # cat's own lines, comment included, kept
    assert text.endswith(before[before.index("  echo:") :])
    locked = yaml.safe_load(text)["servers"]["cat"]["locked"]
    assert locked["server"] == {"name": "catalog-server", "version": "1.0"}
    assert locked["tool_count"] == 2 and sorted(locked["tools"]) == ["convert", "search"]  # hidden tools are not locked
    assert json.loads(locked["tools"]["convert"]["input"]) == TOOLS[0]["inputSchema"]
    assert len(locked["catalog_digest"]) == 16
    assert load_config(lock).servers["cat"].timeout == 5  # still a valid lock file
    assert refresh(lock, capsys) == 0
    assert lock.read_text() == text  # nothing changed: not rewritten, not even the time


def test_check_passes_when_nothing_changed(setup, capsys):
    lock, _ = setup
    refresh(lock, capsys)
    status, report = check_json(lock, capsys)
    assert status == 0
    assert [(s["server"], s["status"], s["changes"]) for s in report["servers"]] == [("cat", "ok", [])]
    assert report["summary"]["ok"] == 1 and report["exit_status"] == 0


@pytest.mark.parametrize(
    "edit, kind, tool, path",
    [
        (lambda t: t.pop("search"), "tool_removed", "search", ""),
        (
            lambda t: (
                t["convert"]["inputSchema"]["properties"].update(scale={"type": "number"}),
                t["convert"]["inputSchema"]["required"].append("scale"),
            ),
            "param_added_required",
            "convert",
            "scale",
        ),
        (
            lambda t: t["convert"]["inputSchema"]["properties"]["unit"].update(enum=["m", "km"]),
            "enum_narrowed",
            "convert",
            "unit",
        ),
        (
            lambda t: t["convert"]["inputSchema"]["properties"]["value"].update(type="string"),
            "type_changed",
            "convert",
            "value",
        ),
        (lambda t: t["convert"]["inputSchema"]["properties"].pop("precision"), "param_removed", "convert", "precision"),
    ],
)
def test_breaking_changes_fail_the_check_and_are_named(setup, capsys, edit, kind, tool, path):
    lock, tools_file = setup
    refresh(lock, capsys)
    change(tools_file, edit)
    status, report = check_json(lock, capsys)
    assert status == 1
    server = report["servers"][0]
    assert server["status"] == "breaking"
    assert {"tool": tool, "kind": kind, "breaking": True, "path": path} == {
        k: v for k, v in server["changes"][0].items() if k != "detail"
    }
    # the human report names it too
    assert mcpgw("lock", "check", "--config", str(lock), "--profile", "p", "--timeout", "30") == 1
    out = capsys.readouterr().out
    assert "BREAKING" in out and tool in out and kind.replace("_", " ") in out and "exit status 1" in out


def test_compatible_changes_pass_the_check_and_are_listed(setup, capsys):
    lock, tools_file = setup
    refresh(lock, capsys)

    def edit(tools):
        tools["convert"]["inputSchema"]["properties"]["unit"]["enum"].append("ft")  # widened enum
        tools["convert"]["inputSchema"]["properties"]["round"] = {"type": "boolean"}  # new optional parameter
        tools["search"]["description"] = "search things, better"  # description
        tools["hidden"]["inputSchema"] = {"type": "object", "required": ["x"]}  # hidden: not the lock's business
        tools["new_tool"] = {"name": "new_tool", "inputSchema": {"type": "object"}}  # added tool

    change(tools_file, edit, version="1.1")
    status, report = check_json(lock, capsys)
    assert status == 0
    server = report["servers"][0]
    assert server["status"] == "compatible" and server["reason"] == "server catalog-server 1.0 -> catalog-server 1.1"
    assert sorted((c["kind"], c["tool"], c["path"]) for c in server["changes"]) == [
        ("description_changed", "search", ""),
        ("enum_widened", "convert", "unit"),
        ("param_added_optional", "convert", "round"),
        ("tool_added", "new_tool", ""),
    ]
    assert not any(c["breaking"] for c in server["changes"])


def test_refresh_after_a_change_updates_the_lock_and_check_passes_again(setup, capsys):
    lock, tools_file = setup
    refresh(lock, capsys)
    change(tools_file, lambda t: t.pop("search"), version="2.0")
    assert check_json(lock, capsys)[0] == 1
    assert mcpgw("lock", "refresh", "--config", str(lock), "--profile", "p", "--timeout", "30") == 0
    out = capsys.readouterr().out
    assert "updated" in out and "1 breaking" in out
    assert yaml.safe_load(lock.read_text())["servers"]["cat"]["locked"]["server"]["version"] == "2.0"
    assert lock.read_text().count("locked:") == 1  # replaced, not added twice
    assert check_json(lock, capsys)[0] == 0


def test_a_server_that_does_not_start_is_an_error_and_keeps_its_lock(setup, capsys):
    lock, tools_file = setup
    refresh(lock, capsys)
    locked_before = yaml.safe_load(lock.read_text())["servers"]["cat"]["locked"]
    tools_file.unlink()  # the server now dies at start
    status, report = check_json(lock, capsys)
    assert status == 2
    assert report["servers"][0]["status"] == "error" and "could not check" in report["servers"][0]["reason"]
    assert mcpgw("lock", "refresh", "--config", str(lock), "--profile", "p", "--timeout", "30") == 1
    assert "failed" in capsys.readouterr().out
    assert yaml.safe_load(lock.read_text())["servers"]["cat"]["locked"] == locked_before


def test_unlocked_servers_are_listed_not_started_and_do_not_fail(setup, capsys):
    lock, _ = setup
    refresh(lock, capsys)  # locks only profile p: cat
    status = mcpgw("lock", "check", "--config", str(lock), "--profile", "both", "--timeout", "30", "--json")
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert [(s["server"], s["status"]) for s in report["servers"]] == [("cat", "ok"), ("echo", "unlocked")]


def test_unreadable_locked_data_is_an_error_naming_the_server(setup, capsys):
    lock, _ = setup
    refresh(lock, capsys)
    lock.write_text(lock.read_text().replace("input: '{", "input: '{broken", 1))
    status, report = check_json(lock, capsys)
    assert status == 2
    assert (
        report["servers"][0]["status"] == "error"
        and "server 'cat': locked.tools.convert.input" in report["servers"][0]["reason"]
    )


def test_missing_lock_file_and_unknown_profile_are_one_line_errors(tmp_path, setup, capsys):
    lock, _ = setup
    assert mcpgw("lock", "check", "--config", str(tmp_path / "nope.yaml")) == 2
    assert "file not found" in capsys.readouterr().err
    assert mcpgw("lock", "refresh", "--config", str(lock), "--profile", "nope") == 2
    assert "unknown profile 'nope'" in capsys.readouterr().err
