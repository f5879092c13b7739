"""`mcpgw connect` edges: the URL `serve` prints (ending in /mcp) as --gateway, and an -o it cannot write."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.gateway.test_status_client import TOKEN, token_gateway  # noqa: F401 - the fixture


def connect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "connect", *args, "--auth-token-env", "MCPGW_TEST_TOKEN"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MCPGW_TEST_TOKEN": TOKEN},
        timeout=60,
    )


def test_the_mcp_endpoint_as_gateway_gives_the_same_file(token_gateway):  # noqa: F811
    from_base = connect("vscode", "--gateway", token_gateway.base)
    from_endpoint = connect("vscode", "--gateway", token_gateway.base + "/mcp/")
    assert from_base.returncode == 0 and from_endpoint.returncode == 0, from_endpoint.stderr
    assert from_endpoint.stdout == from_base.stdout
    assert json.loads(from_endpoint.stdout)["servers"]["mcpgw"]["url"] == token_gateway.base + "/mcp"


@pytest.mark.parametrize(
    "output, problem",
    [
        ("{tmp}", "Is a directory"),
        ("{tmp}/nodir/x.json", "No such file or directory"),
        ("/dev/full", "No space left on device"),
    ],
)
def test_an_output_it_cannot_write_is_one_line(token_gateway, tmp_path, output, problem):  # noqa: F811
    if output == "/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    output = output.format(tmp=tmp_path)
    done = connect("vscode", "--gateway", token_gateway.base, "-o", output)
    assert done.returncode == 2
    assert done.stderr.strip() == f"mcpgw: cannot write {output}: {problem}", done.stderr
