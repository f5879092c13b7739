"""A cassette recorded by an older mcpgw replays byte for byte as that mcpgw replayed it.

tests/fixtures/cassettes/pre-rooms/ was recorded at commit ee23bba, before the core moved into rooms (eight calls
of server-everything: its list, echoes, a sum, one call with invalid arguments, structured content, an image;
one echo repeated). The same calls, replayed by that mcpgw, gave the bodies kept in pre-rooms.json. Replayed
now (offline: the server is never started), every body must be those bytes. When a change means to answer
otherwise, it is a format change: say so, and keep a reader for the old recordings.
"""

from __future__ import annotations

import json
import shutil

import httpx

from tests.conftest import ROOT, start_gateway, stop_gateway

FIXTURE = ROOT / "tests" / "fixtures" / "cassettes"
CONFIG = """version: 1
servers:
  every:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
"""
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def test_a_cassette_recorded_before_the_rooms_replays_byte_for_byte(tmp_path):
    kept = json.loads((FIXTURE / "pre-rooms.json").read_text())
    cassette = tmp_path / "cassettes" / "test"
    cassette.mkdir(parents=True)
    shutil.copy(FIXTURE / "pre-rooms" / "data.mdb", cassette / "data.mdb")  # a copy: the fixture stays as recorded
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "replay", "--log-cassette", "replay-log", naming=None)
    try:
        url = gateway.url + "?run=fixture"
        with httpx.Client(timeout=30) as client:
            opened = client.post(
                url,
                headers=HEADERS,
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "fixture", "version": "0"},
                    },
                },
            )
            session = {
                **HEADERS,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            client.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            bodies = [
                client.post(
                    url, headers=session, json={"jsonrpc": "2.0", "id": number, "method": method, "params": params}
                ).text
                for number, (method, params) in enumerate(kept["calls"], 1)
            ]
    finally:
        stop_gateway(gateway)
    assert len(bodies) == len(kept["replayed_bodies"]) == 8
    for number, (now, then) in enumerate(zip(bodies, kept["replayed_bodies"]), 1):
        assert now == then, f"call {number} ({kept['calls'][number - 1]}) replays otherwise than it did"
    assert (cassette / "data.mdb").read_bytes() == (
        FIXTURE / "pre-rooms" / "data.mdb"
    ).read_bytes()  # read, not written
