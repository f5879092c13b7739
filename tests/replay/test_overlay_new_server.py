"""Issue 50, item 5: `--mode hybrid --overlay O` with a server the base lacks.

Real parts: a base recorded through `mcpgw serve` in front of one server (the misbehaving fixture, default
naming: bare in front of one), then a hybrid serve over it with an overlay and a second, real server
(server-everything, started with npx as users start it), then a replay of base + overlay. The new server's spec
and catalog go into the overlay (the base is read-only: no ERROR line, no record that could not be written),
the replay answers it, and the tool names are the ones the recording was made under in every run.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_per_server import run, sdk_calls

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
ONE = "version: 1\nservers:\n" + misbehaving_entry("fx")
# The new server first in the lock: the replay, which has no lock, lists the tools in the hybrid run's order
TWO = (
    "version: 1\nservers:\n"
    + f'  every:\n    command: npx\n    args: ["-y", "{EVERYTHING}", "stdio"]\n'
    + misbehaving_entry("fx")
)
# Both servers offer `echo`: under the base's bare naming it is prefixed in front of both, the rest stays bare
STEPS = [("fx__echo", {"message": "recorded"}), ("fx__echo", {"message": "new"}), ("get-sum", {"a": 2, "b": 3})]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "ERROR" in line or "could not be written" in line]


@pytest.mark.real  # starts a registry package (npx)
@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is needed to start server-everything")
def test_hybrid_overlay_keeps_a_new_server_and_its_naming_for_the_replay(tmp_path):
    cassettes = tmp_path / "cassettes"
    where = ("--cassettes-dir", str(cassettes))
    recorder = start_gateway(tmp_path / "rec", ONE, "--mode", "record", "--cassette", "base", *where, naming=None)
    try:
        names, _ = run(lambda: sdk_calls(recorder.url, "legacy", [("echo", {"message": "recorded"})]))
    finally:
        stop_gateway(recorder)
    assert "echo" in names  # one server, default naming: its own names
    base = cassettes / "base" / "data.mdb"
    before = digest(base)

    hybrid = start_gateway(
        tmp_path / "hybrid",
        TWO,
        "--mode",
        "hybrid",
        "--cassette",
        "base",
        "--overlay",
        "O",
        "--log-cassette",
        "hybrid-log",
        *where,
        naming=None,
    )
    try:
        assert hybrid.server("every")["state"] == "ready", hybrid.log()
        hybrid_names, hybrid_results = run(lambda: sdk_calls(hybrid.url, "legacy", STEPS))
    finally:
        stop_gateway(hybrid)
    assert errors(hybrid.log()) == [], hybrid.log()
    assert digest(base) == before  # the base is never written
    # The recording's naming (bare) is kept, a second server or not (auto would prefix every name now)
    assert {"wipe", "get-sum", "fx__echo", "every__echo"} <= set(hybrid_names), hybrid_names
    assert not any(r.get("isError") for r in hybrid_results), hybrid_results
    assert [r["source"] for r in iter_calls(cassettes / "hybrid-log")] == ["recorded", "live", "live"]

    # Base + overlay, the new server never started: it answers both servers, under the same names
    player = start_gateway(
        tmp_path / "replay",
        TWO,
        "--mode",
        "replay",
        "--cassette",
        "base",
        "--overlay",
        "O",
        "--log-cassette",
        "replay-log",
        *where,
        naming=None,
    )
    try:
        replay_names, replay_results = run(lambda: sdk_calls(player.url, "legacy", STEPS))
    finally:
        stop_gateway(player)
    assert errors(player.log()) == [], player.log()
    assert replay_names == hybrid_names
    assert replay_results == hybrid_results
    records = list(iter_calls(cassettes / "replay-log"))
    assert [(r["server"], r["exposed_name"], r["source"]) for r in records] == [
        ("fx", "fx__echo", "recorded"),
        ("fx", "fx__echo", "live"),
        ("every", "get-sum", "live"),
    ]
    assert digest(base) == before


def test_a_replay_names_tools_as_the_recording_did_unless_a_naming_is_given(tmp_path):
    two = ONE + misbehaving_entry("other")
    where = ("--cassettes-dir", str(tmp_path / "cassettes"))
    recorder = start_gateway(tmp_path / "rec", two, "--mode", "record", "--cassette", "both", *where, naming=None)
    try:
        names, recorded = run(lambda: sdk_calls(recorder.url, "legacy", [("fx__echo", {"message": "hi"})]))
    finally:
        stop_gateway(recorder)
    assert "fx__wipe" in names  # two servers, default naming: prefixed

    # In front of one of them (auto would be bare now): the recording's names, its answer
    player = start_gateway(
        tmp_path / "one",
        two,
        "--mode",
        "replay",
        "--cassette",
        "both",
        "--servers",
        "fx",
        "--log-cassette",
        "one-log",
        *where,
        naming=None,
    )
    try:
        names, replayed = run(lambda: sdk_calls(player.url, "legacy", [("fx__echo", {"message": "hi"})]))
        assert player.status()["naming"] == "prefix"
    finally:
        stop_gateway(player)
    assert "fx__wipe" in names and "wipe" not in names and replayed == recorded

    # A naming given wins (the cassette is keyed on server and the server's own name, whatever the naming)
    given = start_gateway(
        tmp_path / "given",
        two,
        "--mode",
        "replay",
        "--cassette",
        "both",
        "--servers",
        "fx",
        "--naming",
        "auto",
        "--log-cassette",
        "given-log",
        *where,
        naming=None,
    )
    try:
        names, replayed = run(lambda: sdk_calls(given.url, "legacy", [("echo", {"message": "hi"})]))
    finally:
        stop_gateway(given)
    assert "wipe" in names and replayed == recorded
