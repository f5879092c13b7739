"""A server whose declared key is missing starts without it, as MCP-Bench runs it: its tools are listed,
its calls get the server's own answer, and `/status` and `mcpgw servers` say which key it lacks.
`--require-keys` keeps it stopped (test_bad_input.py runs with it). The gateway runs in this process."""

from __future__ import annotations

import os

import pytest

from mcpgw.cli import main
from tests.conftest import misbehaving_entry
from tests.gateway.test_bad_input import acall

KEY = "MCPGW_TEST_ABSENT_KEY"
CONFIG = "version: 1\nservers:\n" + misbehaving_entry("keyless", extra=f"    env: [{KEY}]\n")


@pytest.mark.anyio
async def test_a_server_missing_its_key_starts_lists_tools_and_answers_for_itself(inprocess_factory, capsys):
    assert KEY not in os.environ
    gateway = inprocess_factory(CONFIG)
    info = gateway.server("keyless")
    assert info["state"] == "ready" and info["missing_keys"] == [KEY] and info["tools"] > 0
    # The variable is left unset (not set empty): the server sees what it would see without the gateway.
    assert (await acall(gateway, "keyless__env", {"name": KEY})).content[0].text == f"{KEY}="
    capsys.readouterr()
    assert main(["servers", "--url", gateway.base]) == 0
    assert f"started without {KEY}" in capsys.readouterr().out


def test_require_keys_keeps_it_stopped_and_says_why(inprocess_factory):
    gateway = inprocess_factory(CONFIG, "--require-keys")
    info = gateway.server("keyless")
    assert info["state"] == "unavailable" and info["reason"] == f"missing {KEY} (--require-keys)"
