"""Issue 25 item 10: replay lanes (run ids, clients without one) are bounded like sessions.

Each lane a client names held its replay state for good; 10,000 run ids cost 13.6 MB. The tables
(cassette.lane_table) keep at most `max_lanes`, dropping the least recently used; a lane in use
is never the one dropped, and a dropped lane starts afresh."""

from __future__ import annotations

import tracemalloc

import anyio
import pytest

from mcpgw.cassette.lane_table import LaneTable
from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.replay.cassette_upstream import CassetteUpstream
from tests.llm.test_lanes import INTERLEAVED, answers, model_lanes
from tests.replay.test_own_lane import PARAMS, entries


def test_the_table_drops_the_least_recently_used_lane():
    dropped: list[str] = []
    table: LaneTable[list] = LaneTable(2, on_evict=lambda lane, _: dropped.append(lane))
    table.use("a", list).append(1)
    table.use("b", list)
    table.use("a", list)  # a is now the most recent
    table.use("c", list)
    assert list(table) == ["a", "c"] and dropped == ["b"] and table.evicted == 1
    assert table.use("a", list) == [1]  # kept with its state


def test_tool_replay_keeps_at_most_max_lanes_and_memory_stays_flat():
    key = CassetteUpstream("time", None, [], tracked=False).model.keyed("tools/call", PARAMS, "").key
    bounded = CassetteUpstream("time", None, entries(key), tracked=False, max_lanes=50)

    async def many(upstream: CassetteUpstream, count: int) -> None:
        for i in range(count):
            await upstream.request("tools/call", PARAMS, CallOptions(lane=f"run-{i}"))

    tracemalloc.start()
    anyio.run(many, bounded, 5000)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(bounded.player.lanes) == 50 and len(bounded.player.group) == 50
    assert bounded.player.lanes.evicted == 4950
    assert held < 2_000_000, held  # 5,000 lanes unbounded held about 7 MB here

    async def recent_lane_keeps_its_place() -> list[str]:
        texts = []
        for _ in range(2):
            reply = await bounded.request("tools/call", PARAMS, CallOptions(lane="t1~2"))
            texts.append(reply.result["content"][0]["text"])
        return texts

    assert anyio.run(recent_lane_keeps_its_place) == ["09:05 (rerun)", "09:06 (rerun)"]


def test_model_replay_lanes_are_bounded_and_a_dropped_lane_frees_what_it_followed():
    lanes = model_lanes(INTERLEAVED, max_lanes=2)
    assert answers(lanes, "u/client-x", "k") == ["a1"]
    assert answers(lanes, "u/client-y", "k") == ["b1"]
    for i in range(1000):
        answers(lanes, f"run-{i}", "k")
    assert len(lanes.lanes) == 2 and lanes.lanes.evicted == 1000
    # x and y were dropped: their recorded lanes are free again, and a new client replays one from its start
    assert answers(lanes, "u/client-z", "k", "k") == ["a1", "a2"]


@pytest.mark.parametrize("churned", [80, 10_000])
def test_a_dropped_run_is_refused_however_many_runs_came_and_went(tmp_path, churned):
    """Issue 41 item 2: the names of dropped lanes were kept in a list of 10 x --max-lanes; past it, a returning
    run was a fresh one and got the server's first recorded answer again ('old' where it had written 'x').
    --max-lanes 5, run A writes, `churned` other runs read, A reads: refused, and memory stays flat."""
    from mcpgw.cassette.cassette import Cassette
    from mcpgw.cassette.recording_upstream import RecordingUpstream
    from mcpgw.cassette.redaction import Redactor
    from mcpgw.cassette.state import GroupState
    from mcpgw.gateway.errors.tree import ReplayDiverged
    from tests.recorder.test_recording_order import CATALOG, call, notes_server

    cassette = Cassette(tmp_path / "c")
    recording = RecordingUpstream(notes_server([]), cassette, tracked=True, redact=Redactor([]), lock_digest="d")

    async def record() -> None:
        for request in (call("read"), call("write", text="x"), call("read")):
            await recording.request(*request, CallOptions(lane="A"))

    anyio.run(record)
    recorded = cassette.load()
    cassette.close()
    replay = CassetteUpstream(
        "notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"], max_lanes=5, group=GroupState(5)
    )

    async def play() -> list[str]:
        async def text(lane: str, request: tuple) -> str:
            try:
                return (await replay.request(*request, CallOptions(lane=lane))).result["content"][0]["text"]
            except ReplayDiverged as exc:
                return "refused: " + exc.message

        answers = [await text("A", call("read")), await text("A", call("write", text="x"))]
        tracemalloc.start()
        for i in range(churned):
            await text(f"other-{i}", call("read"))
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        answers.append(await text("A", call("read")))
        answers.append(str(held))
        return answers

    *answers, held = anyio.run(play)
    assert answers[:2] == ["old", "x"]
    assert answers[2].startswith("refused:") and "--max-lanes" in answers[2], answers[2]
    assert int(held) < 1_500_000, held  # the dropped names are not held in memory
