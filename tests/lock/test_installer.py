"""`mcpgw servers install`: which command warms which cache, and how results are reported.

The orchestration runs against stand-in `npm` and `uvx` scripts (put first on
PATH) that log how they were called; one `real` test warms a real uvx package.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from mcpgw.lock.config import parse_config
from mcpgw.lock.installer import make_plan
from mcpgw.lock.launchers import infer_pin, parse_launch, warm_command
from tests.lock.helpers import mcpgw

ROOT = Path(__file__).resolve().parents[2]

FAKE_RUNNER = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
offline = os.environ.get("npm_config_offline") == "true" or os.environ.get("UV_OFFLINE") == "1"
with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0]))), "runner.log"), "a") as log:
    log.write(json.dumps({{"argv": [os.path.basename(sys.argv[0])] + args, "offline": offline,
                          "pyenv": os.environ.get("PYENV_VERSION")}}) + "\\n")
joined = " ".join(args)
if "broken" in joined:
    sys.stderr.write("resolving...\\nnpm error 404 Not Found - GET https://registry.example/broken - no such package\\n")
    sys.exit(1)
if "onlineonly" in joined and offline:
    sys.stderr.write("error: Network connectivity is disabled, but the requested data wasn't found in the cache\\n")
    sys.exit(2)
if "slow" in joined:
    time.sleep(60)
sys.exit(0)
"""


def lock_text(fs_root: Path) -> str:
    return f"""version: 1
servers:
  good_npm:
    command: npx
    args: ["-y", "good-pkg@1.0.0", "stdio"]
    pin: {{registry: npm, package: good-pkg, version: "1.0.0"}}
  bad_npm:
    command: npx
    args: ["-y", "broken@1.0.0"]
    pin: {{registry: npm, package: broken, version: "1.0.0"}}
  online_uv:
    command: uvx
    args: ["--from", "onlineonly==1.0", "onlineonly"]
    pin: {{registry: pypi, package: onlineonly, version: "1.0"}}
  good_uv:
    command: uvx
    args: ["--exclude-newer", "2025-08-28T00:00:00Z", "--python", "3.12", "--from", "good==2.0", "good-server"]
    env: {{PYENV_VERSION: "3.12.1"}}
    pin: {{registry: pypi, package: good, version: "2.0"}}
  slow:
    command: npx
    args: ["-y", "slow@1.0.0"]
    pin: {{registry: npm, package: slow, version: "1.0.0"}}
  source_only:
    command: python
    args: ["server.py"]
    pin: {{repo: "https://github.com/example/server", commit: "0123456789abcdef0123456789abcdef01234567"}}
  remote:
    url: "https://example.org/mcp"
  fs:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "{fs_root}"]
    pin: {{registry: npm, package: "@modelcontextprotocol/server-filesystem", version: "2026.8.31"}}
profiles:
  all: [good_npm, bad_npm, online_uv, good_uv, slow, source_only, remote, fs]
"""


@pytest.fixture
def fake_runners(tmp_path: Path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("npm", "npx", "uvx"):
        script = bin_dir / name
        script.write_text(FAKE_RUNNER.format(python=sys.executable))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "runner.log"  # the scripts write it next to their bin/: the gateway passes no other env down
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("UV_OFFLINE", "1")  # set by the user: install must still reach the registry
    return log


def test_warm_commands_match_the_cache_the_server_uses():
    npx = parse_launch("npx", ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"])
    assert warm_command(npx) == [
        "npm",
        "exec",
        "--yes",
        "--package",
        "@modelcontextprotocol/server-everything@2026.8.31",
        "--",
        "true",
    ]
    with_packages = parse_launch("npx", ["-y", "-p", "a@1.0.0", "--package=b@2.0.0", "a-bin"])
    assert with_packages.packages == ("a@1.0.0", "b@2.0.0") and with_packages.command == ("a-bin",)
    uvx = parse_launch(
        "uvx",
        [
            "--exclude-newer",
            "2025-08-28T00:00:00Z",
            "--with",
            "mcp==1.9.4",
            "--from",
            "biomcp-python==0.4.6",
            "biomcp",
            "run",
        ],
    )
    assert warm_command(uvx) == [
        "uvx",
        "--exclude-newer",
        "2025-08-28T00:00:00Z",
        "--with",
        "mcp==1.9.4",
        "--from",
        "biomcp-python==0.4.6",
        "python",
        "-c",
        "pass",
    ]
    bare = parse_launch("uvx", ["mcp-server-time@0.6.2"])
    assert warm_command(bare) == ["uvx", "--from", "mcp-server-time==0.6.2", "python", "-c", "pass"]
    uv_tool = parse_launch("/usr/bin/uv", ["tool", "run", "--from", "x==1", "x"])
    assert warm_command(uv_tool) == ["/usr/bin/uv", "tool", "run", "--from", "x==1", "python", "-c", "pass"]
    assert parse_launch("python", ["server.py"]) is None
    assert parse_launch("npx", ["-y"]) is None


def test_pins_inferred_only_from_exact_versions():
    assert infer_pin("uvx", ["--from", "pkg[cli]==1.2.3", "pkg"]).package == "pkg"
    assert infer_pin("uvx", ["--from", "pkg>=1.2", "pkg"]) is None
    assert infer_pin("npx", ["-y", "@scope/pkg@^1.2.0"]) is None
    assert infer_pin("npx", ["-y", "@scope/pkg@latest"]) is None
    assert infer_pin("npx", ["-y", "@scope/pkg"]) is None
    assert infer_pin("npx", ["-y", "@scope/pkg@1.2.0-beta.1"]).version == "1.2.0-beta.1"


def test_the_real_mcpbench_lock_plans(tmp_path):
    config = parse_config((ROOT / "servers.lock.yaml").read_text(), "servers.lock.yaml")
    plans = {s.id: make_plan(s) for s in config.servers.values()}
    built = {sid for sid, spec in config.servers.items() if spec.build is not None}
    assert len(built) == 23  # 14 with no registry package, 9 whose registry package is not the code MCP-Bench ran
    assert {sid for sid, p in plans.items() if p.skip is None} == set(config.profiles["installable"]) | built
    assert plans["medical_calculator"].warm[-5:] == ["--from", "medcalc==0.3.0", "python", "-c", "pass"]
    assert plans["medical_calculator"].env["PYENV_VERSION"] == "3.12.1"
    assert plans["filesystem"].dirs == ["/tmp/mcpgw-fs"]
    assert plans["bibliomantic"].skip is None
    assert plans["bibliomantic"].package == "source Accenture/mcp-bench@09e5233 mcp_servers/bibliomantic-mcp-server"


def test_install_reports_installed_failed_and_skipped(tmp_path, fake_runners, capsys):
    fs_root = tmp_path / "fs-root"
    lock = tmp_path / "servers.lock.yaml"
    lock.write_text(lock_text(fs_root))
    status = mcpgw("servers", "install", "--config", str(lock), "--profile", "all", "--timeout", "3", "--jobs", "3")
    out = capsys.readouterr().out
    assert status == 1
    rows = {
        line.split("│")[1].strip(): line
        for line in out.splitlines()
        if line.startswith("│") and line.split("│")[1].strip()
    }
    assert "installed" in rows["good_npm"] and "installed" in rows["good_uv"] and "installed" in rows["fs"]
    assert "failed" in rows["bad_npm"] and "404 Not Found" in out
    assert "failed" in rows["online_uv"] and "offline run still needs the registry" in out
    assert "failed" in rows["slow"] and "timed out after 3s" in out
    assert "skipped" in rows["source_only"] and "no registry pin" in out
    assert "skipped" in rows["remote"] and "http server with no launch command" in out
    assert "4 installed" not in out and "3 installed, 3 failed, 2 skipped" in out
    assert fs_root.is_dir()  # server-filesystem refuses to start without its root
    calls = [json.loads(line) for line in fake_runners.read_text().splitlines()]
    uv = [c for c in calls if "good==2.0" in c["argv"]]
    assert [c["offline"] for c in uv] == [
        False,
        True,
    ]  # fetched online (despite the user's UV_OFFLINE), then checked offline
    assert uv[0]["argv"] == [
        "uvx",
        "--exclude-newer",
        "2025-08-28T00:00:00Z",
        "--python",
        "3.12",
        "--from",
        "good==2.0",
        "python",
        "-c",
        "pass",
    ]
    assert uv[0]["pyenv"] == "3.12.1"  # the entry's own env, as the gateway gives it
    npm = [c for c in calls if "good-pkg@1.0.0" in c["argv"]]
    assert npm[0]["argv"] == ["npm", "exec", "--yes", "--package", "good-pkg@1.0.0", "--", "true"]


def test_install_joins_the_servers_command_without_breaking_it():

    from mcpgw.cli import build_parser
    from mcpgw.commands.status import cmd_servers

    parser = build_parser()
    status = parser.parse_args(["servers", "--json"])
    assert status.json is True and status.func is cmd_servers
    install = parser.parse_args(["servers", "install", "--profile", "local", "--jobs", "2"])
    assert (install.profile, install.jobs, install.config) == (
        "local",
        2,
        None,
    )  # None: ./servers.lock.yaml, else the installed one
    assert install.func is not cmd_servers


@pytest.mark.real
@pytest.mark.skipif(shutil.which("uvx") is None and not (Path(sys.executable).parent / "uvx").exists(), reason="no uvx")
def test_real_uvx_package_installs_and_then_starts_offline(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    lock = tmp_path / "servers.lock.yaml"
    lock.write_text("""version: 1
servers:
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time"]
    pin: {registry: pypi, package: mcp-server-time, version: "2026.10.19"}
""")
    assert mcpgw("servers", "install", "--config", str(lock), "--timeout", "300") == 0
    out = capsys.readouterr().out
    assert "starts offline" in out and "bytecode compiled" in out
    # compiled in the environment the server runs from (PYTHONDONTWRITEBYTECODE would stop it at start)
    from mcpgw.lock.config import load_config
    from mcpgw.lock.install_lookup import direct_spec

    prefix = Path(direct_spec(load_config(str(lock)).servers["time"]).command).parent.parent
    assert list(prefix.glob("lib/python*/site-packages/mcp_server_time/__pycache__/server.*.pyc"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    assert mcpgw("lock", "refresh", "--config", str(lock), "--timeout", "120") == 0
    assert "mcp-time" in capsys.readouterr().out


def test_a_pin_that_disagrees_with_the_command_is_flagged():
    config = parse_config(
        """version: 1
servers:
  nixos:
    command: uvx
    args: ["--from", "mcp-nixos==3.1.0", "mcp-nixos"]
    pin: {registry: pypi, package: mcp-nixos, version: "1.0.0"}
""",
        "l.yaml",
    )
    assert (
        make_plan(config.servers["nixos"]).warning
        == "the pin says mcp-nixos@1.0.0 but the command runs mcp-nixos@3.1.0"
    )
