"""The model's replay lanes (cassette.player.Player over cassette.lanes.LaneRule, binding untagged
clients): a replay lane answers from one recorded lane in that lane's order."""

from __future__ import annotations

from mcpgw.cassette.player import HIT, Player
from mcpgw.llm.passthrough import CHAT, MODEL


def body(key: str) -> dict:
    """A chat request standing for `key` (what a recorded entry of that key was asked)."""
    return {"model": "m", "messages": [{"role": "user", "content": key}]}


def entry(key: str, lane: str, answer: str) -> dict:
    return {
        "key": MODEL.keyed(CHAT, body(key), "").key,
        "server": MODEL.server,
        "method": CHAT,
        "params": body(key),
        "lane": lane,
        "result": answer,
    }


def model_lanes(entries: list[dict], past_end: str = "repeat", max_lanes: int = 10_000) -> Player:
    return Player(MODEL, entries, past_end=past_end, bind_untagged=True, max_lanes=max_lanes)


def answers(lanes: Player, lane: str, *keys: str) -> list:
    turns = [lanes.play(lane, CHAT, body(k)) for k in keys]
    return [turn.entry["result"] if turn.outcome == HIT else None for turn in turns]


# Two untagged clients recorded the same request twice each, interleaved (A1, B1, A2, B2).
INTERLEAVED = [
    entry("k", "u/client-a", "a1"),
    entry("k", "u/client-b", "b1"),
    entry("k", "u/client-a", "a2"),
    entry("k", "u/client-b", "b2"),
]


def test_untagged_lanes_each_replay_one_recorded_lane_whatever_the_order():
    one_after_the_other = model_lanes(INTERLEAVED)
    assert answers(one_after_the_other, "u/client-x", "k", "k") == ["a1", "a2"]
    assert answers(one_after_the_other, "u/client-y", "k", "k") == ["b1", "b2"]
    interleaved = model_lanes(INTERLEAVED)
    got = {"x": [], "y": []}
    for lane in ("x", "y", "y", "x"):
        got[lane] += answers(interleaved, f"u/client-{lane}", "k")
    assert got == {"x": ["a1", "a2"], "y": ["b1", "b2"]}


def test_a_first_request_of_its_own_binds_a_client_to_its_recorded_lane():
    recorded = [entry("alpha", "u/client-a", "alpha answer"), entry("beta", "u/client-b", "beta answer"), *INTERLEAVED]
    lanes = model_lanes(recorded)
    assert answers(lanes, "u/client-y", "beta", "k", "k") == ["beta answer", "b1", "b2"]  # B's conversation first
    assert answers(lanes, "u/client-x", "alpha", "k", "k") == ["alpha answer", "a1", "a2"]


def test_a_tagged_lane_replays_its_own_recording_and_others_fall_back_to_every_lane():
    recorded = [entry("k", "t1", "failed attempt"), entry("k", "t1~2", "retry"), entry("q", "t1", "only in t1")]
    lanes = model_lanes(recorded)
    assert answers(lanes, "t1~2", "k", "q") == ["retry", "only in t1"]  # a request its lane never made: any lane's
    assert answers(lanes, "t1", "k") == ["failed attempt"]
    assert answers(lanes, "someone", "k") == ["failed attempt"]  # every recorded lane is followed already
    assert answers(model_lanes(recorded), "t1", "unknown") == [None]


def test_past_the_end_repeats_or_misses():
    repeat, miss = model_lanes(INTERLEAVED), model_lanes(INTERLEAVED, past_end="miss")
    assert answers(repeat, "u/client-a", "k", "k", "k") == ["a1", "a2", "a2"]
    assert answers(miss, "u/client-a", "k", "k", "k") == ["a1", "a2", None]


def test_a_hybrid_miss_recorded_live_is_what_its_lane_replays_next():
    lanes = model_lanes(INTERLEAVED)
    assert answers(lanes, "u/client-x", "k") == ["a1"]
    missed = lanes.play("u/client-x", CHAT, body("new"))
    assert missed.outcome == "miss" and missed.lane.diverged is None  # a stateless kind never diverges
    lanes.took_live(missed, "u/client-x", entry("new", "u/client-x", "live answer"))
    assert answers(lanes, "u/client-x", "new") == ["live answer"]  # past its end: the live answer repeats
    assert answers(lanes, "u/client-z", "new") == ["live answer"]


def test_a_second_evaluation_on_the_same_gateway_replays_whole_conversations_again():
    """The first evaluation's clients kept their recorded lanes claimed (nothing says a client left): the
    next ones found every lane taken and were answered from all lanes in order, B getting A's answer."""
    lanes = model_lanes(INTERLEAVED)
    for round_ in range(3):
        first, second = f"u/client-{round_}x", f"u/client-{round_}y"
        assert answers(lanes, first, "k") == ["a1"]
        assert answers(lanes, second, "k") == ["b1"], round_
        assert answers(lanes, second, "k") == ["b2"] and answers(lanes, first, "k") == ["a2"]
