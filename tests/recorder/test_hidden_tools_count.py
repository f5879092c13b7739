"""Issue 44.11: `mcpgw servers` counted the tools served (250) while `cassette show`/`ls` counted what the
servers list (252, two hidden by the lock's hide_tools). Every surface now counts the tools served and
names the hidden ones apart."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway


def mcpgw(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_servers_and_cassette_count_the_same_tools_and_name_the_hidden(tmp_path):
    config = "version: 1\nservers:\n" + misbehaving_entry("fx", extra="    hide_tools: [wipe, crash]\n")
    gateway = start_gateway(tmp_path, config, "--mode", "record")
    try:
        status = gateway.status()
        table = mcpgw("servers", "--url", gateway.base)
    finally:
        stop_gateway(gateway)
    served = status["tools"]
    assert status["hidden_tools"] == 2 and status["servers"]["fx"]["hidden_tools"] == ["crash", "wipe"]
    assert f"{served} tools (+2 the servers list and the lock hides" in table.stdout, table.stdout
    where = ("--cassettes-dir", str(tmp_path / "cassettes"))
    show = json.loads(mcpgw("cassette", "show", "test", *where, "--json").stdout)
    assert show["servers"]["fx"]["tools"] == served and show["servers"]["fx"]["hidden_tools"] == 2
    listing = mcpgw("cassette", "ls", *where).stdout
    assert f"{served} (+2 hidden)" in listing, listing
