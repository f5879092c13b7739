"""While recording, a lane's calls reach a server with state in the order they were keyed (cassette.lane_gate).

A read sent while the lane's write is still being answered (two calls of one planning round) was answered by
the server from the state before the write and stored under the key of the state after it: replayed one
after the other, the read got the old state's answer (a wrong answer, found by the differential fuzzer with
server-filesystem). The double here is a server whose write takes a while."""

from __future__ import annotations

from typing import Any

import anyio

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.recording_upstream import RecordingUpstream
from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.state import GroupState
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import CallOptions, HandlerUpstream
from mcpgw.lock.install_lookup import CacheInstalls
from mcpgw.replay.cassette_upstream import CassetteUpstream

CATALOG = ServerCatalog(
    {"capabilities": {"tools": {}}, "serverInfo": {"name": "notes", "version": "1"}},
    tools=[
        {"name": "write", "inputSchema": {"type": "object"}},
        {"name": "read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    ],
)


def notes_server(order: list[str], append: bool = False) -> HandlerUpstream:
    note = ["old"]

    async def handler(method: str, params: dict[str, Any]) -> dict[str, Any]:
        name = params["name"]
        order.append(f"{name} starts")
        if name == "write":
            await anyio.sleep(0.2)
            note[0] = (note[0] if append else "") + params["arguments"]["text"]
        else:
            await anyio.sleep(0.05)
        order.append(f"{name} ends")
        return {"content": [{"type": "text", "text": note[0]}]}

    return HandlerUpstream("notes", handler, CATALOG)


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return "tools/call", {"name": name, "arguments": arguments}


def test_a_read_sent_while_the_write_before_it_runs_is_recorded_at_the_state_after_it(tmp_path):
    order: list[str] = []
    cassette = Cassette(tmp_path / "c")
    recording = RecordingUpstream(notes_server(order), cassette, tracked=True, redact=Redactor([]), lock_digest="d")
    answers: dict[str, str] = {}

    async def send(label: str, request: tuple[str, dict[str, Any]], delay: float) -> None:
        await anyio.sleep(delay)
        reply = await recording.request(*request, CallOptions(lane="run-1"))
        answers[label] = reply.result["content"][0]["text"]

    async def record() -> None:
        async with anyio.create_task_group() as round_:  # one planning round: the read is sent while the write runs
            round_.start_soon(send, "write", call("write", text="new"), 0)
            round_.start_soon(send, "read", call("read"), 0.02)
            round_.start_soon(send, "read again", call("read", again=True), 0.04)

    anyio.run(record)
    assert answers == {"write": "new", "read": "new", "read again": "new"}
    assert order[:2] == ["write starts", "write ends"]  # the reads waited for it; then they overlapped
    assert sorted(order[2:]) == sorted(["read starts", "read ends", "read starts", "read ends"])
    assert order[2:4] == ["read starts", "read starts"]
    recorded = cassette.load()
    cassette.close()

    replay = CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"])

    async def replay_in_turn() -> list[str]:
        out = []
        for request in (call("write", text="new"), call("read")):
            out.append((await replay.request(*request, CallOptions(lane="run-1"))).result["content"][0]["text"])
        return out

    assert anyio.run(replay_in_turn) == ["new", "new"]


def test_a_write_sent_while_a_read_runs_waits_for_it_and_a_cancelled_wait_lets_the_next_go(tmp_path):
    order: list[str] = []
    cassette = Cassette(tmp_path / "c")
    recording = RecordingUpstream(notes_server(order), cassette, tracked=True, redact=Redactor([]), lock_digest="d")
    answers: dict[str, str] = {}

    async def main() -> None:
        async def send(label: str, request: tuple[str, dict[str, Any]]) -> None:
            answers[label] = (await recording.request(*request, CallOptions(lane="run-1"))).result["content"][0]["text"]

        async with anyio.create_task_group() as round_:
            round_.start_soon(send, "read", call("read"))
            await anyio.sleep(0.01)
            with anyio.move_on_after(0.01):  # a write given up while it waits for the read
                await recording.request(*call("write", text="lost"), CallOptions(lane="run-1"))
            round_.start_soon(send, "write", call("write", text="new"))
        assert recording._group.gates.in_flight("run-1") == 0

    anyio.run(main)
    cassette.close()
    assert answers == {"read": "old", "write": "new"}
    assert order == ["read starts", "read ends", "write starts", "write ends"]


def test_hybrid_catch_up_re_sends_a_call_another_run_took_live(tmp_path):
    """Hybrid: run h1 takes a write live (a miss); run h2 makes the same write (a hit on h1's live answer), then a
    read that misses: h2's fresh instance is caught up by re-sending the write. Entries taken live lacked the
    method and params a catch-up re-sends: the read failed with {"code": 0, "message": "'method'"}."""
    import shutil

    from mcpgw.gateway.upstreams.isolation import PerRunUpstream
    from mcpgw.lock.config import ServerSpec

    order: list[str] = []
    cassette = Cassette(tmp_path / "c")
    per_run = PerRunUpstream(
        ServerSpec("notes", "stdio", "x"),
        lambda spec, catalog: notes_server(order),
        CacheInstalls(),
        idle_timeout=60,
        start_timeout=5,
    )
    recording = RecordingUpstream(per_run, cassette, tracked=True, redact=Redactor([]), lock_digest="d")
    hybrid = CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, [], fallback=recording)

    async def main() -> list[str]:
        async with anyio.create_task_group() as tasks:
            await tasks.start(hybrid.run)
            answers = []
            for lane, request in (
                ("h1", call("write", text="new")),
                ("h2", call("write", text="new")),
                ("h2", call("read")),
            ):
                answers.append((await hybrid.request(*request, CallOptions(lane=lane))).result["content"][0]["text"])
            tasks.cancel_scope.cancel()
        return answers

    try:
        assert anyio.run(main) == ["new", "new", "new"]
    finally:
        cassette.close()
        shutil.rmtree(per_run._catalog_dir, ignore_errors=True)
    assert order.count("write starts") == 2  # h1's live write, and h2's caught-up instance's


def test_a_run_whose_instance_stopped_idle_is_recorded_as_starting_over(tmp_path):
    """`isolation: run`: a run idle past --run-idle-timeout loses its instance (and state); its next call is
    answered by a fresh one. It was recorded under the run's old history, so a replay of the run without the
    pause got the fresh state's answer where the live server answers from the run's state (a wrong answer).
    The composition root tells the run's history to start over (mcpgw/app.py gives `on_idle_stop`)."""
    import shutil

    from mcpgw.gateway.upstreams.isolation import PerRunUpstream
    from mcpgw.lock.config import ServerSpec

    order: list[str] = []
    cassette = Cassette(tmp_path / "c")
    group = GroupState()
    # as mcpgw/app.py builds it in record mode (on_idle_stop is the fix)
    per_run = PerRunUpstream(
        ServerSpec("notes", "stdio", "x"),
        lambda spec, catalog: notes_server(order),
        CacheInstalls(),
        idle_timeout=0.3,
        start_timeout=5,
        on_idle_stop=group.forget,
    )
    recording = RecordingUpstream(per_run, cassette, tracked=True, redact=Redactor([]), lock_digest="d", group=group)

    async def record() -> list[str]:
        async with anyio.create_task_group() as tasks:
            await tasks.start(per_run.run)
            answers = [
                (await recording.request(*call("write", text="x"), CallOptions(lane="r1"))).result["content"][0]["text"]
            ]
            answers.append(
                (await recording.request(*call("read"), CallOptions(lane="r1"))).result["content"][0]["text"]
            )
            await anyio.sleep(1.5)  # idle: the instance stops
            assert per_run.run_instances == 0
            answers.append(
                (await recording.request(*call("read"), CallOptions(lane="r1"))).result["content"][0]["text"]
            )
            tasks.cancel_scope.cancel()
        return answers

    try:
        assert anyio.run(record) == ["x", "x", "old"]  # the fresh instance's state
        recorded = cassette.load()
    finally:
        cassette.close()
        shutil.rmtree(per_run._catalog_dir, ignore_errors=True)
    replay = CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"])

    async def replay_without_the_pause() -> list[str]:
        return [
            (await replay.request(*request, CallOptions(lane=lane))).result["content"][0]["text"]
            for lane, request in (
                ("r1", call("write", text="x")),
                ("r1", call("read")),
                ("r1", call("read")),
                ("r2", call("read")),
            )
        ]

    # The run's own reads are at the state after its write; the fresh-state read answers a fresh run.
    assert anyio.run(replay_without_the_pause) == ["x", "x", "x", "old"]


def test_a_run_dropped_for_room_and_back_is_refused_in_replay_and_never_recorded_as_fresh(tmp_path):
    """--max-lanes bounds the runs held; a run dropped for room (idle while that many others were used) that comes
    back had started afresh: replay answered it from the initial state ('old' where the run had written 'x'), and a
    recording keyed its calls as a fresh run's while the server kept its state. Now replay refuses it, and a
    recording keys it so no replay matches it."""
    from mcpgw.gateway.errors.tree import ReplayDiverged

    order: list[str] = []
    script = [
        ("A", call("read")),
        ("A", call("write", text="x")),
        ("B", call("read")),
        ("C", call("read")),
        ("A", call("read")),
    ]
    cassette = Cassette(tmp_path / "c")
    recording = RecordingUpstream(notes_server(order), cassette, tracked=True, redact=Redactor([]), lock_digest="d")

    async def record() -> list[str]:
        return [
            (await recording.request(*request, CallOptions(lane=lane))).result["content"][0]["text"]
            for lane, request in script
        ]

    assert anyio.run(record) == ["old", "x", "x", "x", "x"]  # B and C share the server's state (isolation: shared)
    recorded = cassette.load()
    cassette.close()
    replay = CassetteUpstream(
        "notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"], max_lanes=2, group=GroupState(2)
    )

    async def play() -> list[str]:
        answers = []
        for lane, request in script:
            try:
                answers.append((await replay.request(*request, CallOptions(lane=lane))).result["content"][0]["text"])
            except ReplayDiverged as exc:
                answers.append("refused: " + exc.message)
        return answers

    answers = anyio.run(play)
    assert answers[:4] == ["old", "x", "x", "x"]
    assert answers[4].startswith("refused:") and "--max-lanes" in answers[4], answers[4]

    # Recording with room for two runs: A, dropped while B and C ran, comes back with keys no replay computes.
    cassette = Cassette(tmp_path / "small")
    small = RecordingUpstream(
        notes_server(order), cassette, tracked=True, redact=Redactor([]), lock_digest="d", group=GroupState(2)
    )
    assert anyio.run(lambda: _record_with(small, script)) == ["old", "x", "x", "x", "x"]
    recorded = cassette.load()
    cassette.close()
    late_read = [e for e in recorded.by_server["notes"] if e["lane"] == "A"][-1]
    assert late_read["history"].startswith("forgotten:")  # no run's replay computes its key


async def _record_with(recording: RecordingUpstream, script: list) -> list[str]:
    return [
        (await recording.request(*request, CallOptions(lane=lane))).result["content"][0]["text"]
        for lane, request in script
    ]


def test_hybrid_a_live_run_whose_instance_stopped_idle_is_caught_up_again_on_its_next_miss(tmp_path):
    """Hybrid: a run that went live keeps talking to its own instance; stopped idle, that instance's state was
    gone, and the run's next live calls met a fresh one ('old' + 'y' where the run had written 'x' first). The
    composition root tells the replaying side (mcpgw/app.py gives `on_idle_stop`), whose next miss for the run
    catches a fresh instance up on what the run replayed and took live."""
    import shutil

    from mcpgw.gateway.upstreams.isolation import PerRunUpstream
    from mcpgw.lock.config import ServerSpec

    order: list[str] = []
    cassette = Cassette(tmp_path / "c")
    # as mcpgw/app.py builds it in hybrid mode (on_idle_stop is the fix)
    per_run = PerRunUpstream(
        ServerSpec("notes", "stdio", "x"),
        lambda spec, catalog: notes_server(order, append=True),
        CacheInstalls(),
        idle_timeout=0.3,
        start_timeout=5,
        on_idle_stop=lambda lane: hybrid.instance_stopped(lane),
    )
    recording = RecordingUpstream(per_run, cassette, tracked=True, redact=Redactor([]), lock_digest="d")
    hybrid = CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, [], fallback=recording)

    async def main() -> list[str]:
        async with anyio.create_task_group() as tasks:
            await tasks.start(hybrid.run)
            options = CallOptions(lane="h1")
            answers = [(await hybrid.request(*call("write", text="x"), options)).result["content"][0]["text"]]
            await anyio.sleep(1.5)  # idle: the run's instance stops
            assert per_run.run_instances == 0
            for request in (call("read"), call("write", text="y"), call("read")):
                answers.append((await hybrid.request(*request, CallOptions(lane="h1"))).result["content"][0]["text"])
            tasks.cancel_scope.cancel()
        return answers

    try:
        assert anyio.run(main) == ["oldx", "oldx", "oldxy", "oldxy"]
    finally:
        cassette.close()
        shutil.rmtree(per_run._catalog_dir, ignore_errors=True)


def test_the_composition_root_wires_the_idle_stop_of_per_run_servers_when_recording(tmp_path):
    """What the two idle tests above do by hand, mcpgw.app.Gateway does for an `isolation: run` server."""
    import shutil

    from mcpgw.app import Gateway
    from mcpgw.gateway.specs.settings import Settings
    from mcpgw.lock.config import ServerSpec

    gateway = Gateway(
        [ServerSpec("notes", "stdio", "x", isolation="run")],
        Settings(mode="record", cassettes_dir=tmp_path / "cassettes", cassette="rec"),
    )
    try:
        recording = gateway.router.upstreams["notes"]
        assert isinstance(recording, RecordingUpstream)
        stop = recording.inner.on_idle_stop
        assert stop is not None and stop.__self__ is recording._group and stop.__name__ == "forget"
    finally:
        gateway.close()
        shutil.rmtree(recording.inner._catalog_dir, ignore_errors=True)


def hybrid_over(tmp_path, recorded_script: list[tuple[str, tuple[str, dict[str, Any]]]], order: list[str]):
    """A cassette recorded from an appending notes server by `recorded_script`, and a hybrid upstream over it
    whose live side is a fresh appending server (shared: a catch-up re-sends a run's replayed writes to it)."""
    first = Cassette(tmp_path / "rec")
    recording = RecordingUpstream(
        notes_server([], append=True), first, tracked=True, redact=Redactor([]), lock_digest="d"
    )

    async def record() -> None:
        for lane, request in recorded_script:
            await recording.request(*request, CallOptions(lane=lane))

    anyio.run(record)
    recorded = first.load()
    first.close()
    second = Cassette(tmp_path / "hybrid")
    live = RecordingUpstream(
        notes_server(order, append=True), second, tracked=True, redact=Redactor([]), lock_digest="d"
    )
    return CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"], fallback=live), second


def test_hybrid_catches_a_run_up_once_when_two_of_its_reads_go_live_at_once(tmp_path):
    """Two reads of one run, sent at once, both missed: each caught the live side up by re-sending the run's
    replayed write, so it was written twice; the second catch-up saw 'oldxx' where the recording had 'oldx' and
    refused the read as diverged (the catch-up's own check kept it from being a wrong answer)."""
    order: list[str] = []
    hybrid, cassette = hybrid_over(tmp_path, [("r", call("write", text="x"))], order)
    answers: dict[str, str] = {}

    async def main() -> None:
        answers["write"] = (await hybrid.request(*call("write", text="x"), CallOptions(lane="h"))).result["content"][0][
            "text"
        ]

        async def read(label: str) -> None:
            answers[label] = (await hybrid.request(*call("read", which=label), CallOptions(lane="h"))).result[
                "content"
            ][0]["text"]

        async with anyio.create_task_group() as round_:  # one planning round: two reads nobody recorded
            round_.start_soon(read, "read a")
            round_.start_soon(read, "read b")

    try:
        anyio.run(main)
    finally:
        cassette.close()
    assert answers == {"write": "oldx", "read a": "oldx", "read b": "oldx"}
    assert order.count("write starts") == 1  # the one catch-up


def test_hybrid_sends_a_runs_read_live_after_its_write_sent_before_it(tmp_path):
    """In hybrid, a read sent while the run's write was being answered live went to the server before the write
    ended (answered from the state before it); now a run's calls reach the live side in the order they came, as
    when recording, and the read is keyed after the write."""
    order: list[str] = []
    hybrid, cassette = hybrid_over(tmp_path, [("r", call("read", unrelated=True))], order)
    answers: dict[str, str] = {}

    async def send(label: str, request: tuple[str, dict[str, Any]], delay: float) -> None:
        await anyio.sleep(delay)
        answers[label] = (await hybrid.request(*request, CallOptions(lane="h"))).result["content"][0]["text"]

    async def main() -> None:
        async with anyio.create_task_group() as round_:
            round_.start_soon(send, "write", call("write", text="y"), 0)
            round_.start_soon(send, "read", call("read"), 0.02)

    try:
        anyio.run(main)
        recorded = cassette.load()
    finally:
        cassette.close()
    assert answers == {"write": "oldy", "read": "oldy"}
    assert order[:2] == ["write starts", "write ends"]
    replay = CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"])

    async def replay_in_turn() -> list[str]:
        return [
            (await replay.request(*request, CallOptions(lane="h"))).result["content"][0]["text"]
            for request in (call("write", text="y"), call("read"))
        ]

    assert anyio.run(replay_in_turn) == ["oldy", "oldy"]
