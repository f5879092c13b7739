"""`mcpgw servers` (and `connect`, through gateway.commandline.status_client) read a running gateway's /status: from the
URL `serve` prints too (ending in /mcp), and a gateway wanting a token says so rather than "no gateway"."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway

TOKEN = "status-client-test-token-0123456789"


@pytest.fixture(scope="module")
def token_gateway(tmp_path_factory):
    """A live gateway of one fake server that wants a bearer token, from $MCPGW_TEST_TOKEN."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCPGW_TEST_TOKEN", TOKEN)
        running = start_gateway(
            tmp_path_factory.mktemp("status"),
            "version: 1\nservers:\n" + misbehaving_entry("fx"),
            "--mode",
            "live",
            "--auth-token-env",
            "MCPGW_TEST_TOKEN",
            token=TOKEN,
        )
    yield running
    stop_gateway(running)


def mcpgw(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MCPGW_TEST_TOKEN": TOKEN},
        timeout=60,
    )


@pytest.mark.parametrize("suffix", ["", "/", "/mcp", "/mcp/"])
def test_the_base_url_or_the_mcp_endpoint(token_gateway, suffix):
    done = mcpgw("servers", "--url", token_gateway.base + suffix, "--json", "--auth-token-env", "MCPGW_TEST_TOKEN")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["servers"].keys() == {"fx"}


def test_a_gateway_wanting_a_token_says_so_and_how_to_give_it(token_gateway, tmp_path):
    url = token_gateway.base + "/mcp"
    done = mcpgw("servers", "--url", url)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"mcpgw: the gateway at {url} needs a bearer token: pass its token with "
        "--auth-token-env VAR (or --auth-token-file FILE)"
    )
    wrong = tmp_path / "token"
    wrong.write_text("not-the-gateway-token-0123456789")
    done = mcpgw("servers", "--url", url, "--auth-token-file", str(wrong))
    assert done.returncode == 2 and "refused the bearer token given" in done.stderr, done.stderr
