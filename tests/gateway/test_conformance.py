"""The official MCP conformance suite (server scenarios), run against a real server directly and
through the gateway with `--naming bare`: the gateway must pass exactly the checks the server passes.

The suite's scenarios call its own test tools (`test_simple_text`, ...), which no published server
offers, so several fail against server-everything directly as well; what matters here is that putting
the gateway in front changes no verdict. `conformance` 0.1.13 and later need Node 22 (`fs.globSync`);
0.1.12 runs on the Node 20 the project supports.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import free_port, start_gateway, stop_gateway

CONFORMANCE = "@modelcontextprotocol/conformance@0.1.12"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
CONFIG = f"""version: 1
servers:
  everything:
    command: npx
    args: ["-y", "{EVERYTHING}", "stdio"]
"""
# Checks the gateway passes although the server behind it fails them, and why (never the other way).
GATEWAY_ONLY: dict[tuple[str, str], str] = {
    (
        "dns-rebinding-protection",
        "localhost-host-rebinding-rejected",
    ): "the gateway refuses a foreign Host/Origin on its loopback endpoint; server-everything accepts it",
}


def conformance_available() -> str | None:
    """None when the suite runs here; else why not (it must come from the npm cache: no network in tests)."""
    try:
        result = subprocess.run(
            ["npx", "-y", CONFORMANCE, "list", "--server"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run npx {CONFORMANCE}: {exc}"
    if result.returncode != 0 or "server-initialize" not in result.stdout:
        return (
            f"npx {CONFORMANCE} does not run here (fetch it with scripts/fetch-test-servers.sh): {result.stderr[-300:]}"
        )
    return None


def run_suite(url: str, out: Path) -> dict[tuple[str, str], str]:
    """(scenario, check id) -> status, for every server scenario of the active suite."""
    result = subprocess.run(
        ["npx", "-y", CONFORMANCE, "server", "--url", url, "-o", str(out)], capture_output=True, text=True, timeout=400
    )
    assert "=== SUMMARY ===" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]
    verdicts: dict[tuple[str, str], str] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        for check in json.loads(checks.read_text()):
            if check["status"] != "INFO":
                verdicts[(scenario, check["id"])] = check["status"]
    return verdicts


def passed(verdicts: dict[tuple[str, str], str]) -> set[tuple[str, str]]:
    return {key for key, status in verdicts.items() if status == "SUCCESS"}


def start_server_everything(tmp_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = tmp_path / "everything.log"
    process = subprocess.Popen(
        ["npx", "-y", EVERYTHING, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while "listening on port" not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError(f"server-everything did not start: {log.read_text()}")
        time.sleep(0.1)
    return process, f"http://127.0.0.1:{port}/mcp"


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_gateway_with_bare_names_passes_what_the_server_passes(tmp_path):
    reason = conformance_available()
    if reason:
        pytest.skip(reason)
    server, direct_url = start_server_everything(tmp_path)
    try:
        direct = run_suite(direct_url, tmp_path / "direct")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)
    gateway = start_gateway(tmp_path / "gw", CONFIG, "--mode", "live", "--naming", "bare")
    try:
        through = run_suite(gateway.url, tmp_path / "through")
    finally:
        stop_gateway(gateway)

    assert set(through) == set(direct), "the same checks ran"
    assert len(direct) >= 20 and passed(direct), direct  # the suite really ran
    extra = passed(through) - passed(direct)
    assert passed(direct) - passed(through) == set(), {k: through[k] for k in passed(direct) - passed(through)}
    assert extra == set(GATEWAY_ONLY), {k: direct[k] for k in extra}
