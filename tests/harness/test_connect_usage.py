"""`mcpgw connect` edges: the URL `serve` prints (ending in /mcp) as --gateway, and an -o it cannot write.

The command line's entry point (`mcpgw.cli.main`) runs here, against a gateway in this process (the fast tier)."""

from __future__ import annotations

import json
import os

import pytest

from mcpgw.cli import main
from tests.conftest import misbehaving_entry
from tests.gateway.test_status_client import TOKEN
from tests.inprocess import inprocess_gateway


@pytest.fixture(scope="module")
def token_gateway(tmp_path_factory):
    """A live gateway of one fake server that wants a bearer token, from $MCPGW_TEST_TOKEN."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCPGW_TEST_TOKEN", TOKEN)
        with inprocess_gateway(
            tmp_path_factory.mktemp("connect"),
            "version: 1\nservers:\n" + misbehaving_entry("fx"),
            "--mode",
            "live",
            "--auth-token-env",
            "MCPGW_TEST_TOKEN",
            token=TOKEN,
        ) as running:
            yield running


@pytest.fixture
def connect(monkeypatch, capsys):
    monkeypatch.setenv("MCPGW_TEST_TOKEN", TOKEN)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["connect", *args, "--auth-token-env", "MCPGW_TEST_TOKEN"])
        said = capsys.readouterr()
        return code, said.out, said.err

    return run


def test_the_mcp_endpoint_as_gateway_gives_the_same_file(token_gateway, connect):
    base_code, from_base, _ = connect("vscode", "--gateway", token_gateway.base)
    code, from_endpoint, err = connect("vscode", "--gateway", token_gateway.base + "/mcp/")
    assert base_code == 0 and code == 0, err
    assert from_endpoint == from_base
    assert json.loads(from_endpoint)["servers"]["mcpgw"]["url"] == token_gateway.base + "/mcp"


@pytest.mark.parametrize(
    "output, problem",
    [
        ("{tmp}", "Is a directory"),
        ("{tmp}/nodir/x.json", "No such file or directory"),
        ("/dev/full", "No space left on device"),
    ],
)
def test_an_output_it_cannot_write_is_one_line(token_gateway, connect, tmp_path, output, problem):
    if output == "/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    output = output.format(tmp=tmp_path)
    code, _, err = connect("vscode", "--gateway", token_gateway.base, "-o", output)
    assert code == 2
    assert err.strip() == f"mcpgw: cannot write {output}: {problem}", err
