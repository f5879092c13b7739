"""An upstream answers with a `Reply` (the result and where it came from) and fails with a `GatewayError` that
says the same (`answered_by`); the call log's `source` and `cassette_key` are read from them, never from a
`CallOptions` the upstream wrote into. Each kind of answer through one Router: recorded, a recorded error
answered again, a miss, live in record mode (result and error), and hybrid's live side of a miss."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.recording_upstream import RecordingUpstream
from mcpgw.cassette.redaction import Redactor
from mcpgw.gateway.errors.tree import GatewayError, ReplayMiss, UpstreamRejected
from mcpgw.gateway.routing.router import Caller, Router
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import CallOptions, HandlerUpstream, Upstream
from mcpgw.lock.config import ServerSpec
from mcpgw.replay.cassette_upstream import CassetteUpstream

CATALOG = ServerCatalog(
    {"capabilities": {"tools": {}}, "serverInfo": {"name": "calc", "version": "1"}},
    tools=[{"name": "half", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}],
)


def calc(name: str = "calc") -> HandlerUpstream:
    """`half` halves an even number and refuses an odd one with an MCP error, as a server would."""

    async def handler(method: str, params: dict[str, Any]) -> dict[str, Any]:
        n = params["arguments"]["n"]
        if n % 2:
            raise UpstreamRejected(name, -32602, f"{n} is odd")
        return {"content": [{"type": "text", "text": str(n // 2)}]}

    return HandlerUpstream(name, handler, CATALOG)


def calls(upstream: Upstream, numbers: list[int], lane: str = "A") -> list[dict[str, Any]]:
    """Call `half` with each number through a Router; its call-log records."""
    records: list[dict[str, Any]] = []
    router = Router([ServerSpec("calc", "stdio", "x")], {"calc": upstream}, Settings(naming="prefix"), records)

    async def go() -> None:
        with anyio.fail_after(20):
            async with router.running():
                await router.until_settled()
                for n in numbers:
                    try:
                        await router.call_tool({"name": "calc__half", "arguments": {"n": n}}, Caller(lane, tagged=True))
                    except GatewayError:
                        pass

    anyio.run(go)
    return records


def recorded(tmp_path: Path, numbers: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Record `numbers` live: the call-log records, and the cassette's entries."""
    cassette = Cassette(tmp_path / "c")
    try:
        records = calls(
            RecordingUpstream(calc(), cassette, tracked=False, redact=Redactor([]), lock_digest="d"), numbers
        )
        return records, cassette.load().by_server["calc"]
    finally:
        cassette.close()


def facts(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["outcome"], r["source"], r["cassette_key"] is not None) for r in records]


def test_call_options_carry_only_what_the_caller_asks():
    assert [f.name for f in dataclasses.fields(CallOptions)] == [
        "timeout",
        "max_timeout",
        "on_progress",
        "relay",
        "lane",
    ]


def test_record_mode_says_live_and_the_key_each_answer_and_error_is_recorded_under(tmp_path):
    records, entries = recorded(tmp_path, [4, 3])
    assert facts(records) == [("ok", "live", True), ("upstream_error", "live", True)]
    assert [r["cassette_key"] for r in records] == [e["key"] for e in entries]


def test_replay_labels_a_recorded_error_as_recorded_and_a_miss_as_missed(tmp_path):
    _, entries = recorded(tmp_path, [4, 3])
    replay = CassetteUpstream("calc", {"catalog": CATALOG.as_dict()}, entries)
    records = calls(replay, [4, 3, 8])
    # the recorded error is the server's own answer, played again: not a miss (it was labelled `missed` before)
    assert facts(records) == [("ok", "recorded", True), ("upstream_error", "recorded", True), ("miss", "missed", True)]
    assert [r["cassette_key"] for r in records[:2]] == [e["key"] for e in entries]
    assert records[0]["result_digest"] and records[0]["result_digest"] != records[1]["result_digest"]


def test_hybrid_answers_a_miss_live_under_the_replay_key(tmp_path):
    _, entries = recorded(tmp_path, [4])
    cassette = Cassette(tmp_path / "h")
    try:
        live = RecordingUpstream(calc(), cassette, tracked=False, redact=Redactor([]), lock_digest="d")
        hybrid = CassetteUpstream("calc", {"catalog": CATALOG.as_dict()}, entries, fallback=live)
        records = calls(hybrid, [4, 6, 5, 6])
        taken = cassette.load().by_server["calc"]
    finally:
        cassette.close()
    assert facts(records) == [
        ("ok", "recorded", True),
        ("ok", "live", True),
        ("upstream_error", "live", True),
        ("ok", "live", True),
    ]
    # each miss answered live is recorded under the key replay gave it, the error too
    assert [r["cassette_key"] for r in records[1:]] == [e["key"] for e in taken]
    assert [bool(e.get("error")) for e in taken] == [False, True, False]


def test_a_miss_raised_by_a_cassette_says_where_it_came_from():
    replay = CassetteUpstream("calc", {"catalog": CATALOG.as_dict()}, [])

    async def ask() -> None:
        await replay.request("tools/call", {"name": "half", "arguments": {"n": 2}}, CallOptions(lane="A"))

    with pytest.raises(ReplayMiss) as caught:
        anyio.run(ask)
    assert caught.value.answer_source == "missed" and caught.value.cassette_key
