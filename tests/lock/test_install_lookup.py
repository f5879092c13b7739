"""What the gateway reads of an install at start: where a source entry's build lives, and the
command an npx / uvx entry starts from (with the fallback to the lock's own command line)."""

from __future__ import annotations

from pathlib import Path

from mcpgw.lock.config import parse_config
from mcpgw.lock.install_lookup import CacheInstalls, build_dir, direct_spec, remember

LOCK = """version: 1
servers:
  units:
    command: uvx
    args: ["--exclude-newer", "2025-08-28T00:00:00Z", "--from", "unit-converter-mcp==0.1.2", "unit-converter-mcp"]
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
"""

COMMIT = "09e52332b22428bf891be59047e01cb9adc063b4"
BUILT = f"""version: 1
servers:
  s:
    command: python
    args: [server.py]
    source: {{repo: Accenture/mcp-bench, commit: "{COMMIT}", path: mcp_servers/x}}
    build: {{steps: [[make]]}}
"""


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
    from mcpgw.gateway.upstreams.isolation import with_state_dir

    monkeypatch.setenv("MCPGW_CACHE", str(tmp_path / "cache"))
    spec = parse_config(
        """version: 1
servers:
  memory:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
    env: {MEMORY_FILE_PATH: "${RUN_STATE_DIR}/memory.json"}
""",
        "l.yaml",
    ).servers["memory"]
    binary = tmp_path / "bin" / "mcp-server-memory"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    remember(spec, [str(binary)])
    run = with_state_dir(spec, str(tmp_path / "run-1"), CacheInstalls())
    assert (run.command, run.args) == (str(binary), ())
    assert run.env_values["MEMORY_FILE_PATH"] == str(tmp_path / "run-1" / "memory.json")


def test_a_changed_recipe_or_commit_builds_elsewhere():
    base = BUILT
    one = parse_config(base, "l.yaml").servers["s"]
    other_recipe = parse_config(base.replace("[[make]]", "[[make, all]]"), "l.yaml").servers["s"]
    other_commit = parse_config(base.replace(COMMIT, "1" * 40), "l.yaml").servers["s"]
    root = Path("/cache")
    dirs = {build_dir(s, root) for s in (one, other_recipe, other_commit)}
    assert len(dirs) == 3 and all(d.parent == root / "builds" and d.name.startswith("s-") for d in dirs)


def test_an_offline_entry_never_installed_says_to_install_its_profile(tmp_path, monkeypatch):
    """`serve --mode live` before `servers install`: the runners' own errors (uv's "network was disabled",
    npm's ENOTCACHED) come with what to do."""
    from tests.conftest import start_gateway, stop_gateway

    monkeypatch.setenv("MCPGW_CACHE", str(tmp_path / "empty-cache"))
    config = """version: 1
servers:
  ghost_uv:
    command: uvx
    args: ["--from", "mcpgw-test-not-a-package==0.0.1", "ghost"]
    flags: [offline]
  ghost_npm:
    command: npx
    args: ["-y", "@mcpgw-test/not-a-package@0.0.1"]
    flags: [offline]
profiles:
  mine: [ghost_uv, ghost_npm]
"""
    gateway = start_gateway(tmp_path, config, "--profile", "mine")
    try:
        for name in ("ghost_uv", "ghost_npm"):
            info = gateway.wait_state(name, ("unavailable",))  # after its start's retries (restarting first)
            assert info["reason"].startswith("not installed: run `mcpgw servers install --config "), info
            assert "--profile mine`" in info["reason"], info
    finally:
        stop_gateway(gateway)
