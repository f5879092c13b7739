"""Replay that never answers wrong, against real servers the other tests do not use.

server-memory (npm) and mcp-server-git (PyPI), started as users start them (npx, uvx),
configured the careless way (a Claude-Desktop mcpServers JSON: no flags at all), and
driven by SDK clients of both protocol eras, untagged, one after the other and at once.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import start_gateway, stop_gateway
from tests.gateway.test_bad_input import run

pytestmark = pytest.mark.real

MEMORY = ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
GIT = ["--from", "mcp-server-git==2026.10.19", "mcp-server-git"]
ERAS = ("legacy", "2026-07-28")


def memory_config(memory_file: str) -> str:
    """A Claude Desktop config: the way most users bring a server; it cannot say 'stateful'."""
    return json.dumps(
        {"mcpServers": {"memory": {"command": "npx", "args": MEMORY, "env": {"MEMORY_FILE_PATH": memory_file}}}}
    )


def memory_session(third_person: str) -> list[tuple[str, dict]]:
    """16 steps; step 7 creates `third_person` (the recording used Carol)."""
    p = third_person
    return [
        (
            "memory__create_entities",
            {"entities": [{"name": "Alice", "entityType": "person", "observations": ["engineer"]}]},
        ),
        (
            "memory__create_entities",
            {"entities": [{"name": "Bob", "entityType": "person", "observations": ["designer"]}]},
        ),
        ("memory__read_graph", {}),
        ("memory__create_relations", {"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]}),
        ("memory__add_observations", {"observations": [{"entityName": "Alice", "contents": ["likes tea"]}]}),
        ("memory__search_nodes", {"query": "Alice"}),
        ("memory__create_entities", {"entities": [{"name": p, "entityType": "person", "observations": ["pilot"]}]}),
        ("memory__open_nodes", {"names": ["Alice", p]}),
        ("memory__read_graph", {}),
        ("memory__create_relations", {"relations": [{"from": "Bob", "to": p, "relationType": "knows"}]}),
        ("memory__search_nodes", {"query": p}),
        ("memory__read_graph", {}),
        ("memory__delete_observations", {"deletions": [{"entityName": "Alice", "observations": ["likes tea"]}]}),
        ("memory__open_nodes", {"names": [p]}),
        ("memory__delete_entities", {"entityNames": ["Bob"]}),
        ("memory__read_graph", {}),
    ]


async def play(url: str, steps: list[tuple[str, dict]], mode: str) -> list[dict]:
    """Each step's result (content, structuredContent, isError) or its error text."""
    out = []
    with anyio.fail_after(120):
        async with Client(url, mode=mode) as client:
            for name, arguments in steps:
                try:
                    result = await client.call_tool(name, arguments)
                    out.append(
                        result.model_dump(
                            mode="json", by_alias=True, exclude_none=True, exclude={"meta", "result_type"}
                        )
                    )
                except MCPError as exc:
                    out.append({"error": str(exc)})
    return out


def session(url: str, steps: list[tuple[str, dict]], mode: str = "legacy") -> list[dict]:
    return run(lambda: play(url, steps, mode))


def texts(results: list[dict]) -> list[str]:
    return [r["content"][0]["text"] if "content" in r else "ERROR " + r["error"] for r in results]


def long_session() -> list[tuple[str, dict]]:
    """32 steps: the session twice over (the second round meets entities that already exist)."""
    return memory_session("Carol") + memory_session("Erin")


def record_memory(tmp_path: Path, steps: list[tuple[str, dict]] | None = None) -> tuple[list[dict], Path]:
    config = memory_config(str(tmp_path / "memory.json"))
    gateway = start_gateway(
        tmp_path / "rec",
        config,
        "--mode",
        "record",
        "--cassette",
        "mem",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        suffix=".json",
    )
    try:
        recorded = session(gateway.url, steps or memory_session("Carol"))
    finally:
        stop_gateway(gateway)
    assert all("error" not in r for r in recorded), recorded
    return recorded, tmp_path / "cassettes"


def replayer(tmp_path: Path, name: str, cassettes: Path, *args: str):
    """Replay needs no config (the cassette holds its servers); the one given is never started."""
    return start_gateway(
        tmp_path / name,
        memory_config("/nonexistent/memory.json"),
        "--mode",
        "replay",
        "--cassette",
        "mem",
        "--cassettes-dir",
        str(cassettes),
        "--log-cassette",
        f"log-{name}",
        *args,
        suffix=".json",
    )


def test_untagged_clients_each_get_their_own_lane_in_both_eras(tmp_path):
    steps = long_session()
    recorded, cassettes = record_memory(tmp_path, steps)
    assert len(recorded) == 32 and len({json.dumps(r, sort_keys=True) for r in recorded}) > 20
    gateway = replayer(tmp_path, "play", cassettes, "--past-end", "miss")
    try:
        for mode in ERAS:  # 10 clients one after the other per era, no run id: each replays from the start
            for _ in range(10):
                assert session(gateway.url, steps, mode) == recorded

        async def together() -> list[list[dict]]:
            results: list[list[dict]] = [[], [], []]

            async def one(i: int, mode: str) -> None:
                results[i] = await play(gateway.url, steps, mode)

            async with anyio.create_task_group() as tg:
                for i, mode in enumerate(("2026-07-28", "2026-07-28", "legacy")):
                    tg.start_soon(one, i, mode)
            return results

        assert run(together) == [recorded] * 3  # three untagged clients at once never share a lane
    finally:
        stop_gateway(gateway)
    log = list(iter_calls(cassettes / "log-play"))
    assert len(log) == 23 * len(recorded) and {r["outcome"] for r in log} == {"ok"}
    assert len({r["lane"] for r in log}) == 23


def test_diverging_run_on_an_unflagged_server_is_refused_not_answered(tmp_path):
    recorded, cassettes = record_memory(tmp_path)
    gateway = replayer(tmp_path, "play", cassettes)
    try:
        changed = session(gateway.url, memory_session("Dave"), "2026-07-28")
        # Read-only calls replay in any order at the state they were recorded in (steps 8 and 9 swapped);
        # asked at another state (step 6 before steps 4 and 5 changed the graph) they miss.
        order = (0, 1, 3, 4, 6, 8, 7)
        reordered = session(gateway.url, [memory_session("Carol")[i] for i in order])
        early = session(gateway.url, [memory_session("Carol")[i] for i in (0, 1, 5)])
    finally:
        stop_gateway(gateway)
    assert changed[:6] == recorded[:6]
    assert "replay miss" in changed[6]["error"] and "Dave" in changed[6]["error"]
    for later in changed[7:]:  # Carol's recorded graph must never be shown to a run that created Dave
        assert "diverged from the recording" in later["error"] and "at call 7" in later["error"], later
    assert reordered == [recorded[i] for i in order]
    assert early[:2] == recorded[:2] and "other history" in early[2]["error"]
    outcomes = [r["outcome"] for r in iter_calls(cassettes / "log-play")]
    assert outcomes == ["ok"] * 6 + ["miss"] + ["diverged"] * 9 + ["ok"] * 7 + ["ok", "ok", "miss"]


def test_hybrid_catches_up_a_fresh_instance_and_matches_a_live_run(tmp_path):
    _, cassettes = record_memory(tmp_path)
    # The live truth: the changed session on a server that starts empty.
    live_config = memory_config(str(tmp_path / "live-memory.json"))
    live = start_gateway(tmp_path / "live", live_config, "--mode", "live", suffix=".json")
    try:
        truth = session(live.url, memory_session("Dave"))
    finally:
        stop_gateway(live)
    # Hybrid against the recording; the server's file is per instance, so catch-up starts from nothing.
    hybrid_config = memory_config("${RUN_STATE_DIR}/memory.json")
    hybrid = start_gateway(
        tmp_path / "hy",
        hybrid_config,
        "--mode",
        "hybrid",
        "--cassette",
        "mem",
        "--cassettes-dir",
        str(cassettes),
        "--log-cassette",
        "log-hy",
        suffix=".json",
    )
    try:
        answers = session(hybrid.url, memory_session("Dave"), "2026-07-28")
    finally:
        stop_gateway(hybrid)
    assert texts(answers) == texts(truth)
    sources = [r["source"] for r in iter_calls(cassettes / "log-hy")]
    assert sources == ["recorded"] * 6 + ["live"] * 10

    # What hybrid recorded makes the changed session replayable offline.
    again = replayer(tmp_path, "again", cassettes)
    try:
        assert texts(session(again.url, memory_session("Dave"))) == texts(truth)
    finally:
        stop_gateway(again)


def test_hybrid_refuses_when_catch_up_cannot_reach_the_recorded_state(tmp_path):
    _, cassettes = record_memory(tmp_path)
    stale = tmp_path / "stale-memory.json"  # a fixed file that already holds Alice: no fresh state possible
    stale.write_text(
        json.dumps({"type": "entity", "name": "Alice", "entityType": "person", "observations": ["engineer"]}) + "\n"
    )
    hybrid = start_gateway(
        tmp_path / "hy",
        memory_config(str(stale)),
        "--mode",
        "hybrid",
        "--cassette",
        "mem",
        "--cassettes-dir",
        str(cassettes),
        "--log-cassette",
        "log-hy",
        suffix=".json",
    )
    try:
        answers = session(hybrid.url, memory_session("Dave"))
    finally:
        stop_gateway(hybrid)
    assert "error" not in answers[5]
    assert "hybrid catch-up failed" in answers[6]["error"] and "create_entities" in answers[6]["error"]
    assert all("diverged" in a["error"] for a in answers[7:])


def test_isolation_run_gives_each_run_a_fresh_memory(tmp_path):
    config = f"""version: 1
servers:
  memory:
    command: npx
    args: {json.dumps(MEMORY)}
    env: {{MEMORY_FILE_PATH: "${{RUN_STATE_DIR}}/memory.json"}}
    isolation: run
"""
    gateway = start_gateway(tmp_path, config, "--mode", "live")
    create = [("memory__create_entities", {"entities": [{"name": "Zed", "entityType": "x", "observations": []}]})]
    read = [("memory__read_graph", {})]
    try:
        session(gateway.url + "?run=a", create)
        run_a = session(gateway.url + "?run=a", read)
        run_b = session(gateway.url + "?run=b", read)
        untagged = session(gateway.url, read, "2026-07-28")
    finally:
        stop_gateway(gateway)
    assert "Zed" in texts(run_a)[0]
    assert "Zed" not in texts(run_b)[0] and "Zed" not in texts(untagged)[0]


@pytest.mark.parametrize("mode", ERAS)
def test_git_status_of_a_second_untagged_run_is_not_another_runs_answer(tmp_path, mode):
    repo = tmp_path / "repo"
    repo.mkdir()
    for argv in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "T"]):
        subprocess.run(["git", *argv], cwd=repo, check=True)
    (repo / "a.txt").write_text("hello\n")
    config = json.dumps({"mcpServers": {"git": {"command": "uvx", "args": GIT}}})
    steps = [
        ("git__git_status", {"repo_path": str(repo)}),
        ("git__git_add", {"repo_path": str(repo), "files": ["a.txt"]}),
        ("git__git_status", {"repo_path": str(repo)}),
        ("git__git_commit", {"repo_path": str(repo), "message": "first"}),
        ("git__git_status", {"repo_path": str(repo)}),
    ]
    recorder = start_gateway(
        tmp_path / "rec",
        config,
        "--mode",
        "record",
        "--cassette",
        "git",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        suffix=".json",
    )
    try:
        recorded = session(recorder.url, steps, mode)
    finally:
        stop_gateway(recorder)
    assert "a.txt" in texts(recorded)[0] and "a.txt" not in texts(recorded)[4]
    player = start_gateway(
        tmp_path / "play",
        config,
        "--mode",
        "replay",
        "--cassette",
        "git",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
        suffix=".json",
    )
    try:
        first, second = session(player.url, steps, mode), session(player.url, steps, mode)
        status_only = session(player.url, steps[:1], mode)
    finally:
        stop_gateway(player)
    assert first == recorded and second == recorded
    assert status_only == recorded[:1]  # the untracked file is still there for a new run
