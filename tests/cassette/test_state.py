"""The statefulness rule (cassette.state.StateModel.changes_state), asked through every path that uses it:
the rule itself, the keys recording computes, and replay (current cassettes, and old ones re-keyed by
cassette.index). Which calls change state is written out here by hand, so a rule that marks a read as a
change, or a change as a read, fails."""

from __future__ import annotations

import pytest

from mcpgw.cassette.player import DIVERGED, HIT, MISS, Player
from mcpgw.cassette.state import GroupState, StateModel

SERVER = "notebook"
READ_ONLY = frozenset({"peek"})  # as the server's tools/list declares it (readOnlyHint: true)


def call(name: str, **arguments) -> tuple[str, dict]:
    return "tools/call", {"name": name, "arguments": arguments}


# (method, params, changes state on a tracked server), decided by hand from MCP's meaning of each request
RULE = [
    (*call("poke", line="a"), True),  # a tool not declared read-only may change state
    (*call("peek"), False),  # declared read-only
    ("tools/call", None, True),  # no name: not a declared read-only tool
    ("resources/read", {"uri": "note://1"}, False),
    ("resources/list", {}, False),
    ("resources/templates/list", {}, False),
    ("prompts/get", {"name": "p"}, False),
    ("prompts/list", {}, False),
    ("tools/list", {}, False),
    ("completion/complete", {}, False),
    ("ping", None, False),
    ("logging/setLevel", {"level": "debug"}, True),  # anything else: assumed to change state
]


@pytest.mark.parametrize("method,params,changes", RULE)
def test_the_rule_and_the_keys_say_the_same_which_calls_change_state(method, params, changes):
    tracked = StateModel(SERVER, tracked=True, read_only=READ_ONLY)
    assert tracked.changes_state(method, params) is changes
    keyed = tracked.keyed(method, params, "h")
    assert keyed.changes_state is changes
    assert (keyed.history_after() != "h") is changes  # only a change moves the lane's history on
    stateless = StateModel(SERVER, tracked=False, read_only=READ_ONLY)  # a server declared stateless: nothing does
    assert stateless.changes_state(method, params) is False
    assert stateless.keyed(method, params, "h").changes_state is False


# One lane's calls while recording: two changes with reads of each kind between them.
SESSION = [
    call("poke", line="a"),
    call("peek"),
    ("resources/read", {"uri": "note://1"}),
    ("tools/list", {}),
    call("poke", line="b"),
]


def recorded() -> list[dict]:
    """SESSION recorded in lane A, keyed as the recording path keys it (GroupState.take_call)."""
    model, group, out = StateModel(SERVER, True, READ_ONLY), GroupState(), []
    for method, params in SESSION:
        c = group.take_call(model, method, params, "A")
        out.append(
            {
                "key": c.key,
                "base": c.base,
                "history": c.history,
                "changes_state": c.changes_state,
                "server": SERVER,
                "method": method,
                "params": params,
                "lane": "A",
                "result": {"content": [{"type": "text", "text": f"{method} {params}"}], "isError": False},
            }
        )
    return out


def test_recording_moves_a_lanes_history_on_for_changes_only():
    first, peek, read, listed, second = recorded()
    assert first["history"] == ""
    assert first["changes_state"] and second["changes_state"]
    assert not (peek["changes_state"] or read["changes_state"] or listed["changes_state"])
    assert peek["history"] == read["history"] == listed["history"] == second["history"] != ""  # the reads moved nothing
    # the second change is keyed on the first alone: the same as in a lane that made no reads between them
    model, group = StateModel(SERVER, True, READ_ONLY), GroupState()
    group.take_call(model, *SESSION[0], "B")
    assert group.take_call(model, *SESSION[-1], "B").key == second["key"]


def as_old_cassette(entries: list[dict]) -> list[dict]:
    """The same recording as an old cassette holds it: no base or history, keyed by every earlier call
    (cassette.index re-keys it with the rule)."""
    return [
        {k: v for k, v in e.items() if k not in ("base", "history", "changes_state")} | {"key": f"old-{i}"}
        for i, e in enumerate(entries)
    ]


def play(player: Player, lane: str, calls: list[tuple[str, dict]]) -> list[str]:
    return [player.play(lane, method, params).outcome for method, params in calls]


@pytest.mark.parametrize("old", [False, True], ids=["current-cassette", "old-cassette-rekeyed"])
def test_replay_follows_changes_and_lets_reads_miss_without_leaving_the_recording(old):
    entries = as_old_cassette(recorded()) if old else recorded()
    player = Player(StateModel(SERVER, True, READ_ONLY), entries, legacy_stateful=old)
    # the two changes without the reads between them: the reads moved no state, so the second is still a hit
    assert play(player, "B", [SESSION[0], SESSION[-1]]) == [HIT, HIT]
    # a read never recorded is a miss that leaves the lane in the recording (it changed nothing) ...
    assert play(player, "C", [call("peek", page=9), ("resources/read", {"uri": "note://9"}), *SESSION]) == [
        MISS,
        MISS,
        HIT,
        HIT,
        HIT,
        HIT,
        HIT,
    ]
    # ... a change never recorded is not: the server's state is no longer the recording's, later calls are refused
    assert play(player, "D", [call("poke", line="z"), SESSION[0], SESSION[1]]) == [MISS, DIVERGED, DIVERGED]
