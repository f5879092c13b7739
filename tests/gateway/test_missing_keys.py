"""A server whose declared key is missing starts without it, as MCP-Bench runs it: its tools are listed,
its calls get the server's own answer, and `/status` and `mcpgw servers` say which key it lacks.
`--require-keys` keeps it stopped (test_bad_input.py runs with it)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_bad_input import call

KEY = "MCPGW_TEST_ABSENT_KEY"
CONFIG = "version: 1\nservers:\n" + misbehaving_entry("keyless", extra=f"    env: [{KEY}]\n")


def test_a_server_missing_its_key_starts_lists_tools_and_answers_for_itself(tmp_path):
    assert KEY not in os.environ
    gateway = start_gateway(tmp_path, CONFIG)
    try:
        info = gateway.server("keyless")
        assert info["state"] == "ready" and info["missing_keys"] == [KEY] and info["tools"] > 0
        # The variable is left unset (not set empty): the server sees what it would see without the gateway.
        assert call(gateway, "keyless__env", {"name": KEY}).content[0].text == f"{KEY}="
        table = subprocess.run(
            [sys.executable, "-m", "mcpgw.cli", "servers", "--url", gateway.base],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=30,
        )
        assert table.returncode == 0 and f"started without {KEY}" in table.stdout
    finally:
        stop_gateway(gateway)


def test_require_keys_keeps_it_stopped_and_says_why(tmp_path):
    gateway = start_gateway(tmp_path, CONFIG, "--require-keys")
    try:
        info = gateway.server("keyless")
        assert info["state"] == "unavailable" and info["reason"] == f"missing {KEY} (--require-keys)"
    finally:
        stop_gateway(gateway)
