"""Issue 41 item 1: a client that reads one page of `tools/list` sees every tool.

Fourteen real server-everything instances (npx) make a catalog of 224 tools, more than the 200 a page used to
hold; the mcp SDK's `Client.list_tools()` asks once and never follows `nextCursor`, as many real clients do.
"""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from tests.conftest import start_gateway, stop_gateway
from tests.gateway.test_bad_input import run

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
COPIES = 14


def _lock() -> str:
    entries = "".join(f'  e{n}:\n    command: npx\n    args: ["-y", "{EVERYTHING}"]\n' for n in range(COPIES))
    return "version: 1\nservers:\n" + entries


def _one_page(url: str, mode: str) -> tuple[int, str | None]:
    async def go() -> tuple[int, str | None]:
        with anyio.fail_after(60):
            async with Client(url, mode=mode) as client:
                page = await client.list_tools()
                return len(page.tools), page.next_cursor

    return run(go)


@pytest.mark.real
def test_a_one_page_client_sees_the_whole_catalog_and_page_size_pages_it(tmp_path):
    gateway = start_gateway(tmp_path / "whole", _lock(), "--mode", "live")
    try:
        served = sum(s["tools"] for s in gateway.status()["servers"].values())
        assert served > 200, gateway.log()  # more than the old fixed page
        for mode in ("legacy", "2026-07-28"):
            assert _one_page(gateway.url, mode) == (served, None)
    finally:
        stop_gateway(gateway)

    paged = start_gateway(tmp_path / "paged", _lock(), "--mode", "live", "--page-size", "50")
    try:
        count, cursor = _one_page(paged.url, "legacy")
        assert (count, cursor) == (50, "50")
    finally:
        stop_gateway(paged)
