"""Helpers for the lock tests: run `mcpgw` in-process, write catalog-server tool files, list a gateway's tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client

from mcpgw.cli import main
from tests.gateway.test_bad_input import run

CATALOG_SERVER = Path(__file__).resolve().parent / "catalog_server.py"


def mcpgw(*argv: str) -> int:
    """`mcpgw ARGV` in this process; its exit status."""
    return main(list(argv))


def write_tools(path: Path, tools: list[dict], version: str = "1.0") -> Path:
    path.write_text(json.dumps({"name": "catalog-server", "version": version, "tools": tools}))
    return path


def catalog_command(tools_file: Path) -> list[str]:
    return [sys.executable, str(CATALOG_SERVER), str(tools_file)]


def list_tools(url: str) -> list[str]:
    async def go() -> list[str]:
        with anyio.fail_after(30):
            async with Client(url, mode="legacy") as client:
                return sorted(t.name for t in (await client.list_tools()).tools)

    return run(go)


def call_tool(url: str, name: str, arguments: dict) -> str:
    async def go() -> str:
        with anyio.fail_after(30):
            async with Client(url, mode="legacy") as client:
                return (await client.call_tool(name, arguments)).content[0].text

    return run(go)


def call_in_order(url: str, calls: list[tuple[str, dict]]) -> list[str]:
    """The texts of `calls`, made in order by one (handshake-era) client; each must succeed."""

    async def go() -> list[str]:
        texts = []
        with anyio.fail_after(120):
            async with Client(url, mode="legacy") as client:
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, (name, result)
                    texts.append(result.content[0].text)
        return texts

    return run(go)
