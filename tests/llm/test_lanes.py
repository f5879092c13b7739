"""llm.lanes.ReplayLanes on its own: a replay lane answers from one recorded lane in that lane's order."""

from __future__ import annotations

from llm.lanes import ReplayLanes


def entry(key: str, lane: str, answer: str) -> dict:
    return {"key": key, "lane": lane, "result": answer}


def answers(lanes: ReplayLanes, lane: str, *keys: str) -> list:
    return [(lanes.take(lane, k) or {}).get("result") for k in keys]


# Two untagged clients recorded the same request twice each, interleaved (A1, B1, A2, B2).
INTERLEAVED = [entry("k", "u/client-a", "a1"), entry("k", "u/client-b", "b1"),
               entry("k", "u/client-a", "a2"), entry("k", "u/client-b", "b2")]


def test_untagged_lanes_each_replay_one_recorded_lane_whatever_the_order():
    one_after_the_other = ReplayLanes(INTERLEAVED)
    assert answers(one_after_the_other, "u/client-x", "k", "k") == ["a1", "a2"]
    assert answers(one_after_the_other, "u/client-y", "k", "k") == ["b1", "b2"]
    interleaved = ReplayLanes(INTERLEAVED)
    got = {"x": [], "y": []}
    for lane in ("x", "y", "y", "x"):
        got[lane] += answers(interleaved, f"u/client-{lane}", "k")
    assert got == {"x": ["a1", "a2"], "y": ["b1", "b2"]}


def test_a_first_request_of_its_own_binds_a_client_to_its_recorded_lane():
    recorded = [entry("alpha", "u/client-a", "alpha answer"), entry("beta", "u/client-b", "beta answer"), *INTERLEAVED]
    lanes = ReplayLanes(recorded)
    assert answers(lanes, "u/client-y", "beta", "k", "k") == ["beta answer", "b1", "b2"]  # B's conversation first
    assert answers(lanes, "u/client-x", "alpha", "k", "k") == ["alpha answer", "a1", "a2"]


def test_a_tagged_lane_replays_its_own_recording_and_others_fall_back_to_every_lane():
    recorded = [entry("k", "t1", "failed attempt"), entry("k", "t1~2", "retry"), entry("q", "t1", "only in t1")]
    lanes = ReplayLanes(recorded)
    assert answers(lanes, "t1~2", "k", "q") == ["retry", "only in t1"]  # a request its lane never made: any lane's
    assert answers(lanes, "t1", "k") == ["failed attempt"]
    assert answers(lanes, "someone", "k") == ["failed attempt"]  # every recorded lane is followed already
    assert ReplayLanes(recorded).take("t1", "unknown") is None


def test_past_the_end_repeats_or_misses():
    repeat, miss = ReplayLanes(INTERLEAVED), ReplayLanes(INTERLEAVED, past_end="miss")
    assert answers(repeat, "u/client-a", "k", "k", "k") == ["a1", "a2", "a2"]
    assert answers(miss, "u/client-a", "k", "k", "k") == ["a1", "a2", None]


def test_a_hybrid_miss_recorded_live_is_what_its_lane_replays_next():
    lanes = ReplayLanes(INTERLEAVED)
    assert answers(lanes, "u/client-x", "k") == ["a1"]
    assert lanes.take("u/client-x", "new") is None
    lanes.add(entry("new", "u/client-x", "live answer"))
    assert answers(lanes, "u/client-x", "new") == ["live answer"]  # past its end: the live answer repeats
    assert answers(lanes, "u/client-z", "new") == ["live answer"]
