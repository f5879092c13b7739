"""One cassette abstraction for every kind of exchange (issue 23 item 2): a tool server's calls
and the model's completions are played by the same `cassette.player.Player`, so the same recorded
lanes replayed in the same (out-of-order) way give the same answers, and the same divergence rule
decides what a miss does: a stateless kind (the model; a server declared stateless) keeps
answering after a miss, a tracked server's lane refuses once a state-changing call missed."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from mcpgw.cassette import player as player_module
from mcpgw.cassette.state import StateModel
from mcpgw.gateway.endpoints.http_guard import GuardPolicy, HttpGuard, default_allowed_hosts
from mcpgw.gateway.errors.tree import ReplayDiverged, ReplayMiss
from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.llm.passthrough import CHAT, MODEL, ModelPassthrough
from mcpgw.replay.cassette_upstream import CassetteUpstream

TOOL = {"name": "get_time", "arguments": {"timezone": "UTC"}}
OTHER_TOOL = {"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}
CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "what time is it?"}]}
OTHER_CHAT = {"model": "m", "messages": [{"role": "user", "content": "and in Paris?"}]}

# One lane, recorded twice: a failed attempt `t1` then its rerun `t1~2`, which asked twice.
RECORDED_LANES = [("t1", "failed attempt"), ("t1~2", "rerun 1"), ("t1~2", "rerun 2")]
# Replayed out of recorded order: the rerun first (and past its end), then the attempt, then a
# lane nobody recorded, which answers from every lane in recorded order.
REPLAYED = ["t1~2", "t1~2", "t1~2", "t1", "someone", "someone"]
EXPECTED = ["rerun 1", "rerun 2", "rerun 2", "failed attempt", "failed attempt", "rerun 1"]


def tool_entries(server: str, params: dict, lanes: list[tuple[str, str]]) -> list[dict]:
    key = StateModel(server, tracked=False).keyed("tools/call", params, "").key
    return [
        {
            "key": key,
            "base": key,
            "history": "",
            "server": server,
            "method": "tools/call",
            "params": params,
            "lane": lane,
            "result": {"content": [{"type": "text", "text": text}]},
        }
        for lane, text in lanes
    ]


def model_entries(body: dict, lanes: list[tuple[str, str]]) -> list[dict]:
    key = MODEL.keyed(CHAT, body, "").key
    return [
        {
            "key": key,
            "server": MODEL.server,
            "method": CHAT,
            "params": body,
            "lane": lane,
            "result": {
                "status": 200,
                "body": {"choices": [{"message": {"role": "assistant", "content": text}}]},
                "content_type": "application/json",
            },
        }
        for lane, text in lanes
    ]


def tool_answers(upstream: CassetteUpstream, asks: list[tuple[str, dict]]) -> list[str]:
    async def ask() -> list[str]:
        out = []
        for lane, params in asks:
            try:
                reply = await upstream.request("tools/call", params, CallOptions(lane=lane))
                out.append(reply.result["content"][0]["text"])
            except ReplayDiverged:
                out.append("refused: diverged")
            except ReplayMiss:
                out.append("miss")
        return out

    return anyio.run(ask)


def model_answers(passthrough: ModelPassthrough, asks: list[tuple[str, dict]]) -> list[str]:
    """Over HTTP, as a client sees it: the passthrough's own routes in a Starlette app."""

    async def ask() -> list[str]:
        out = []
        guard = GuardPolicy(allowed_hosts=default_allowed_hosts("127.0.0.1"))  # it parses every body its routes read
        transport = httpx.ASGITransport(app=HttpGuard(Starlette(routes=passthrough.routes()), guard))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            for lane, body in asks:
                response = await client.post(CHAT, content=json.dumps(body), headers={"X-Run-Id": lane})
                if response.status_code == 409:
                    out.append("miss")
                else:
                    out.append(response.json()["choices"][0]["message"]["content"])
        return out

    return anyio.run(ask)


@pytest.fixture
def plays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The servers whose requests went through Player.play: the one code path for every kind."""
    seen: list[str] = []
    original = player_module.Player.play

    def play(self: player_module.Player, name: str, method: str, params: dict | None) -> player_module.PlayDecision:
        seen.append(self.model.server)
        return original(self, name, method, params)

    monkeypatch.setattr(player_module.Player, "play", play)
    return seen


def test_out_of_order_lanes_replay_the_same_for_a_tool_call_and_a_model_exchange(plays):
    tool = CassetteUpstream("clock", None, tool_entries("clock", TOOL, RECORDED_LANES), tracked=False)
    model = ModelPassthrough("replay", None, recorded_entries=model_entries(CHAT_BODY, RECORDED_LANES))
    tool_got = tool_answers(tool, [(lane, TOOL) for lane in REPLAYED])
    model_got = model_answers(model, [(lane, CHAT_BODY) for lane in REPLAYED])
    assert tool_got == EXPECTED
    assert model_got[:4] == tool_got[:4]
    # A stranger: the tool answers from every lane in recorded order (an MCP key holds the lane's history),
    # the model binds it to the recorded lane holding its first request that the fewest follow (t1), whole.
    assert model_got[4:] == ["failed attempt", "failed attempt"]
    assert plays == ["clock"] * len(REPLAYED) + ["@model"] * len(REPLAYED)


def test_a_miss_in_a_stateless_kind_is_not_a_divergence_for_either_kind(plays):
    tool = CassetteUpstream("clock", None, tool_entries("clock", TOOL, [("r", "12:00")]), tracked=False)
    model = ModelPassthrough("replay", None, recorded_entries=model_entries(CHAT_BODY, [("r", "12:00")]))
    assert tool_answers(tool, [("r", OTHER_TOOL), ("r", TOOL)]) == ["miss", "12:00"]
    assert model_answers(model, [("r", OTHER_CHAT), ("r", CHAT_BODY)]) == ["miss", "12:00"]
    assert tool.lane_report()["r"]["diverged"] is None and model.player.lane_report()["r"]["diverged"] is None
    assert plays == ["clock", "clock", "@model", "@model"]


def test_the_same_rule_makes_a_tracked_server_refuse_after_a_state_changing_miss():
    tool = CassetteUpstream("clock", None, tool_entries("clock", TOOL, [("r", "12:00")]), tracked=True)
    # the recorded entry was keyed with no history, so its first call answers; a state-changing miss
    # then diverges the lane, and even a request recorded before is refused
    assert tool_answers(tool, [("r2", OTHER_TOOL), ("r2", TOOL)]) == ["miss", "refused: diverged"]
    assert "not recorded at this point" in tool.lane_report()["r2"]["diverged"]
    assert tool_answers(tool, [("r3", TOOL)]) == ["12:00"]  # another lane is untouched
