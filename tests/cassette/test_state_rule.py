"""Issue 41 item 10: the statefulness rule (cassette.state.StateModel.changes_state) is written once and every
path that keys a call asks it: a broken rule fails here, however it breaks.

Which calls move a lane's history on: a tools/call of a tool not declared read-only (readOnlyHint), and any
method that is not a read; never a read, a read-only tool, or a call to a server declared stateless.
"""

from __future__ import annotations

import anyio
import pytest

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.recording_upstream import RecordingUpstream
from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.state import StateModel
from mcpgw.gateway.errors.tree import ReplayDiverged, ReplayMiss
from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.replay.cassette_upstream import CassetteUpstream
from tests.recorder.test_recording_order import CATALOG, call, notes_server

RULE = [  # (tracked, method, params, changes state)
    (True, "tools/call", {"name": "write"}, True),
    (True, "tools/call", {"name": "read"}, False),  # declared read-only
    (True, "resources/read", {"uri": "x"}, False),
    (True, "tools/list", None, False),
    (True, "resources/subscribe", {"uri": "x"}, True),  # not a read: assumed to change state
    (False, "tools/call", {"name": "write"}, False),  # a stateless server
]


@pytest.mark.parametrize(("tracked", "method", "params", "changes"), RULE)
def test_the_rule_and_the_keys_say_the_same(tracked, method, params, changes):
    model = StateModel("notes", tracked, frozenset({"read"}))
    assert model.changes_state(method, params) is changes
    keyed = model.keyed(method, params, "h0")
    assert keyed.changes_state is changes
    assert (keyed.history_after() != keyed.history) is changes


def test_reads_a_replay_adds_do_not_move_its_history_and_writes_do(tmp_path):
    """Recorded: write x, read, write y. Replayed with two more reads before `write y`: still a hit (reads move no
    history); with another write instead, `write y` is at another state: refused, as the rule says."""
    cassette = Cassette(tmp_path / "c")
    recording = RecordingUpstream(notes_server([]), cassette, tracked=True, redact=Redactor([]), lock_digest="d")

    async def record() -> None:
        for request in (call("write", text="x"), call("read"), call("write", text="y")):
            await recording.request(*request, CallOptions(lane="A"))

    anyio.run(record)
    recorded = cassette.load()
    cassette.close()

    def replay(lane: str, script: list) -> list[str]:
        upstream = CassetteUpstream("notes", {"catalog": CATALOG.as_dict()}, recorded.by_server["notes"])

        async def play() -> list[str]:
            out = []
            for request in script:
                try:
                    out.append((await upstream.request(*request, CallOptions(lane=lane))).result["content"][0]["text"])
                except (ReplayDiverged, ReplayMiss):
                    out.append("refused")
            return out

        return anyio.run(play)

    reads = replay("A", [call("write", text="x"), call("read"), call("read"), call("read"), call("write", text="y")])
    assert reads == ["x", "x", "x", "x", "y"]
    writes = replay("A", [call("write", text="x"), call("write", text="x"), call("write", text="y")])
    assert writes[-1] == "refused"
