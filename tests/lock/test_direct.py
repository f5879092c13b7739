"""Finding the command inside an installed npx / uvx environment (how the gateway starts from it,
and falls back when it is gone: tests/gateway/test_installed.py)."""

from __future__ import annotations

import json

from mcpgw.lock.direct import direct_argv, locate_command
from mcpgw.lock.launchers import parse_launch


def test_uvx_runs_the_command_from_the_environment_it_reports(tmp_path):
    launch = parse_launch(
        "uvx", ["--exclude-newer", "2025-08-28T00:00:00Z", "--from", "unit-converter-mcp==0.1.2", "unit-converter-mcp"]
    )
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
