"""A tagged lane replays its own recordings of a request first (replay.cassette_upstream):
a task's rerun (`t1~2`) never gets the answers its failed attempt (`t1`) was given."""

from __future__ import annotations

import anyio

from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.replay.cassette_upstream import CassetteUpstream

PARAMS = {"name": "get_current_time", "arguments": {"timezone": "UTC"}}


def entries(key: str) -> list[dict]:
    def entry(lane: str, text: str) -> dict:
        return {
            "key": key,
            "base": key,
            "history": "",
            "server": "time",
            "method": "tools/call",
            "params": PARAMS,
            "lane": lane,
            "result": {"content": [{"type": "text", "text": text}]},
        }

    return [entry("t1", "09:00 (failed attempt)"), entry("t1~2", "09:05 (rerun)"), entry("t1~2", "09:06 (rerun)")]


def answer(upstream: CassetteUpstream, lane: str) -> str:
    async def ask() -> str:
        reply = await upstream.request("tools/call", PARAMS, CallOptions(lane=lane))
        return reply.result["content"][0]["text"]

    return anyio.run(ask)


def test_a_tagged_lane_answers_from_its_own_recording_and_others_from_all():
    key = CassetteUpstream("time", None, [], tracked=False).model.keyed("tools/call", PARAMS, "").key
    upstream = CassetteUpstream("time", None, entries(key), tracked=False)
    assert [answer(upstream, "t1~2") for _ in range(3)] == ["09:05 (rerun)", "09:06 (rerun)", "09:06 (rerun)"]
    assert answer(upstream, "t1") == "09:00 (failed attempt)"
    assert [answer(upstream, "someone") for _ in range(2)] == ["09:00 (failed attempt)", "09:05 (rerun)"]


def test_each_replayed_answer_carries_its_own_digest_for_the_call_log():
    """The digest a replayed answer hands the call log (Reply.result_digest) is made once per recorded answer:
    each answer's own, on its first replay and on every later one, never another answer's."""
    from mcpgw.gateway.encoding.result_digest import result_digest

    key = CassetteUpstream("time", None, [], tracked=False).model.keyed("tools/call", PARAMS, "").key
    upstream = CassetteUpstream("time", None, entries(key), tracked=False)

    async def ask(lane: str) -> tuple[str, str | None, str]:
        reply = await upstream.request("tools/call", PARAMS, CallOptions(lane=lane))
        return reply.result["content"][0]["text"], reply.result_digest, result_digest(reply.result)

    got = [anyio.run(ask, lane) for lane in ["t1~2", "t1", "t1~2", "t1~2", "x", "x", "x", "x"]]
    assert {text for text, _, _ in got} == {"09:00 (failed attempt)", "09:05 (rerun)", "09:06 (rerun)"}
    assert all(told == made for _, told, made in got)
    assert len({told for _, told, _ in got}) == 3
