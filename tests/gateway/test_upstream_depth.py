"""Issue 50 item 13: one stdio line nested 100,000 deep from a server is that call's error; the server's
connection lives on, so the next call to it is answered (it used to end with a RecursionError in the reader)."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.gateway.errors.tree import RESPONSE_TOO_LARGE
from tests.conftest import misbehaving_entry

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("deep", "--deep-echo", "nest")


def test_a_deeply_nested_answer_is_that_calls_error_and_the_connection_lives(gateway_factory):
    gateway = gateway_factory(CONFIG, "--call-timeout", "20")
    pid = gateway.server("deep").get("pid")

    async def go():
        with anyio.fail_after(60):
            async with Client(gateway.url) as client:
                with pytest.raises(MCPError) as err:
                    await client.call_tool("deep__echo", {"message": "nest"})
                after = await client.call_tool("deep__echo", {"message": "still here"})
                return err.value, after

    error, after = anyio.run(go)
    assert error.code == RESPONSE_TOO_LARGE and "nested deeper than the gateway reads" in str(error), str(error)
    assert after.content[0].text == "echo: still here"
    status = gateway.server("deep")
    assert status["state"] == "ready" and status["restarts"] == 0, status
    assert status.get("pid") == pid
    assert "RecursionError" not in gateway.log()
