"""Starting an installed npx / uvx package straight from its environment: which command is picked,
and the fallback to the lock's own command line when that environment is gone."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.config import parse_config
from gateway.installed import direct_spec, remember
from lock.direct import direct_argv, locate_command
from lock.launchers import parse_launch

LOCK = """version: 1
servers:
  units:
    command: uvx
    args: ["--exclude-newer", "2025-08-28T00:00:00Z", "--from", "unit-converter-mcp==0.1.2", "unit-converter-mcp"]
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
"""


def test_uvx_runs_the_command_from_the_environment_it_reports(tmp_path):
    launch = parse_launch("uvx", ["--exclude-newer", "2025-08-28T00:00:00Z", "--from", "unit-converter-mcp==0.1.2",
                                  "unit-converter-mcp"])
    probe = locate_command(launch)
    assert probe[:5] == ["uvx", "--exclude-newer", "2025-08-28T00:00:00Z", "--from", "unit-converter-mcp==0.1.2"]
    assert probe[5:7] == ["python", "-c"] and "sys.prefix" in probe[7]
    env = tmp_path / "env"
    assert direct_argv(launch, str(env)) is None  # nothing installed there
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "unit-converter-mcp").write_text("#!/bin/sh\n")
    assert direct_argv(launch, str(env)) == [str(env / "bin" / "unit-converter-mcp")]


def test_npx_runs_the_packages_bin_with_the_words_after_the_spec(tmp_path):
    launch = parse_launch("npx", ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"])
    modules = tmp_path / "_npx" / "abc" / "node_modules"
    package = modules / "@modelcontextprotocol" / "server-everything"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"bin": {"mcp-server-everything": "dist/index.js"}}))
    (modules / ".bin").mkdir()
    (modules / ".bin" / "mcp-server-everything").write_text("")
    path = f"/usr/local/bin:{modules / '.bin'}:/usr/bin"
    assert direct_argv(launch, path) == [str(modules / ".bin" / "mcp-server-everything"), "stdio"]
    assert direct_argv(launch, "/usr/bin:/bin") is None  # npm exec put no package folder on PATH


def test_the_lock_command_is_used_when_the_installed_environment_is_gone(tmp_path, monkeypatch):
    spec = parse_config(LOCK, "l.yaml").servers["units"]
    assert direct_spec(spec, tmp_path) == spec  # never installed
    binary = tmp_path / "env" / "bin" / "unit-converter-mcp"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    remember(spec, [str(binary)], tmp_path)
    direct = direct_spec(spec, tmp_path)
    assert (direct.command, direct.args) == (str(binary), ())
    monkeypatch.setenv("MCPGW_NO_DIRECT", "1")
    assert direct_spec(spec, tmp_path) == spec
    monkeypatch.delenv("MCPGW_NO_DIRECT")
    binary.unlink()  # e.g. `uv cache clean`
    assert direct_spec(spec, tmp_path) == spec
    # A changed command line is another environment: the old record does not apply.
    Path(binary).write_text("")
    changed = parse_config(LOCK.replace("0.1.2", "0.1.3"), "l.yaml").servers["units"]
    assert direct_spec(changed, tmp_path) == changed


def test_an_entry_with_a_run_state_dir_starts_from_its_installed_environment_too(tmp_path, monkeypatch):
    """memory keeps its graph in ${RUN_STATE_DIR}: each instance fills that in, and must still be
    launched directly (the record is keyed by the lock's words, placeholder included)."""
    from gateway.isolation import with_state_dir

    monkeypatch.setenv("MCPGW_CACHE", str(tmp_path / "cache"))
    spec = parse_config("""version: 1
servers:
  memory:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
    env: {MEMORY_FILE_PATH: "${RUN_STATE_DIR}/memory.json"}
""", "l.yaml").servers["memory"]
    binary = tmp_path / "bin" / "mcp-server-memory"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    remember(spec, [str(binary)])
    run = with_state_dir(spec, str(tmp_path / "run-1"))
    assert (run.command, run.args) == (str(binary), ())
    assert run.env_values["MEMORY_FILE_PATH"] == str(tmp_path / "run-1" / "memory.json")
