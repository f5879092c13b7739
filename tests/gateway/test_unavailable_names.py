"""Issue 44, item 14: on `/mcp`, a tool name whose prefix names a known server that is unavailable (failed to
start, not installed) is answered with that server's state and reason, as its per-server endpoint and the REST
API answer, not with "Unknown tool ...; did you mean ...". A name no server claims is still an unknown tool."""

from __future__ import annotations

import re

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.gateway.errors.tree import UPSTREAM_UNAVAILABLE
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import misbehaving_entry
from tests.gateway.test_bad_input import run

CONFIG = (
    "version: 1\nservers:\n"
    + misbehaving_entry("good")
    + misbehaving_entry("dead", "--exit-at-start")
    + "  nocmd:\n    command: /nonexistent/server-binary\n"
)


def refusal(url: str, name: str) -> MCPError:
    async def go():
        async with Client(url, mode="legacy") as client:
            await client.call_tool(name, {"message": "hi"})

    with pytest.raises(MCPError) as caught:
        run(go)
    return caught.value


def test_a_prefixed_name_of_an_unavailable_server_says_its_state_and_reason(gateway_factory):
    gateway = gateway_factory(CONFIG, "--mode", "live", "--cassette", "log")
    for server in ("dead", "nocmd"):
        info = gateway.server(server)
        assert info["state"] != "ready" and info["reason"]
        error = refusal(gateway.url, f"{server}__echo")
        assert error.code == UPSTREAM_UNAVAILABLE, error
        # its state when called (a server that exits at start is retried: unavailable and restarting take turns)
        said = re.search(rf"server {server!r}: not available \((\w+): (.+)\)", str(error))
        assert said and said.group(1) in ("unavailable", "restarting", "starting"), error
        assert said.group(1) == info["state"] or server == "dead"  # the one that never starts keeps its state
        assert "Unknown tool" not in str(error)
        assert "did you mean" not in str(error)
    unknown = refusal(gateway.url, "nobody__echo")  # no such server: an unknown tool, with the nearest names
    assert "Unknown tool 'nobody__echo'" in str(unknown) and "good__echo" in str(unknown)
    records = {r["exposed_name"]: r for r in iter_calls(gateway.cassettes / "log")}
    assert (records["dead__echo"]["server"], records["dead__echo"]["tool"]) == ("dead", "echo")
    assert records["dead__echo"]["outcome"] == "upstream_error" and "not available" in records["dead__echo"]["error"]
    assert records["nobody__echo"]["outcome"] == "rejected"


def test_in_front_of_one_unavailable_server_any_name_is_its_own(gateway_factory):
    one = "version: 1\nservers:\n" + misbehaving_entry("dead", "--exit-at-start")
    gateway = gateway_factory(one, "--mode", "live", naming=None)  # one server: bare names (item 2)
    error = refusal(gateway.url, "echo")
    assert error.code == UPSTREAM_UNAVAILABLE and "server 'dead': not available (" in str(error)
