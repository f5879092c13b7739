"""Issue 13, item 6: the call log is bounded per record and in total.

A real `mcpgw serve` (live, tests/fixtures/misbehaving_server.py upstream) called
by the SDK client with large arguments.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import anyio
from mcp import Client

from tests.conftest import ROOT, misbehaving_entry, stop_gateway

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("good")


def echo_many(url: str, messages: list[str]) -> list[str]:
    async def go() -> list[str]:
        with anyio.fail_after(120):
            async with Client(url, mode="legacy") as client:
                return [(await client.call_tool("good__echo", {"message": m})).content[0].text for m in messages]

    return anyio.run(go)


def test_large_values_are_kept_as_size_and_digest_and_a_full_log_says_so(gateway_factory):
    gateway = gateway_factory(CONFIG, "--max-logged-value", "20000", "--max-call-log-mb", "0.5")
    data = gateway.cassettes / "test" / "data.mdb"
    before = data.stat().st_size
    big = "x" * (1 << 20)
    answers = echo_many(gateway.url, [big] * 10)
    assert all(a == f"echo: {big}" for a in answers)  # the client gets everything; the log keeps a digest
    health = gateway.status()["call_log"]
    assert health["dropped"] == 0 and health["error"] is None
    assert data.stat().st_size - before < 200_000  # ten 1 MiB arguments, logged in well under 200 kB

    medium = ["y" * 15_000 + str(i) for i in range(40)]  # under the value cap: kept whole, until the log is full
    assert len(echo_many(gateway.url, medium)) == 40
    health = gateway.status()["call_log"]
    assert health["dropped"] > 0 and "call log full" in health["error"] and "--max-call-log-mb" in health["error"]
    assert data.stat().st_size < 2 * 1024 * 1024
    stop_gateway(gateway)

    export = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "calls", "export", "test", "--cassettes-dir", str(gateway.cassettes)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    records = [json.loads(line) for line in export.stdout.splitlines()]
    digest = hashlib.sha256(big.encode()).hexdigest()
    assert [r["arguments"]["message"] for r in records[:10]] == [f"«omitted: {1 << 20} bytes, sha256 {digest}»"] * 10
    kept = [r for r in records[10:]]
    assert 0 < len(kept) < 40 and all(r["arguments"]["message"] in medium for r in kept)
