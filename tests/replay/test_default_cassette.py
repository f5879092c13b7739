"""The embedded default cassette: a bare `mcpgw serve` replays cassettes/default with nothing to start.

No network, npx or uvx: the gateway runs with PATH=/nonexistent from a temporary folder
holding a copy of cassettes/default, so the repository is never written to (a replay opens
its cassette writable, which creates lock.mdb, and writes its call log to a new cassette
beside it). The cassette is made by scripts/record_default_cassette.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.cassette.cassette import Cassette, Recorded
from tests.conftest import ROOT, RunningGateway, free_port, stop_gateway

EMBEDDED = ROOT / "cassettes" / "default"
SEPARATOR = "__"  # servers.lock.yaml, prefix naming
ERAS = ("legacy", "2026-07-28")


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningGateway, Recorded, Path]]:
    if not (EMBEDDED / "data.mdb").exists():
        pytest.fail(f"{EMBEDDED}/data.mdb is missing; record it with `python scripts/record_default_cassette.py`")
    home = tmp_path_factory.mktemp("default-cassette")
    cassettes = home / "cassettes"
    (cassettes / "default").mkdir(parents=True)
    shutil.copy2(EMBEDDED / "data.mdb", cassettes / "default" / "data.mdb")
    copy = Cassette(cassettes / "default", create=False, readonly=True)
    try:
        recorded = copy.load()
    finally:
        copy.close()

    port = free_port()
    log_path = home / "gateway.log"
    env = {
        **os.environ,
        "PATH": "/nonexistent",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with open(log_path, "w") as log:
        # The README's default: no --mode, no --config; run where ./cassettes/default exists.
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpgw.cli", "serve", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=home,
            env=env,
            start_new_session=True,
        )
    gateway = RunningGateway(f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{port}", process, cassettes, log_path)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise AssertionError(f"gateway exited ({process.returncode}): {gateway.log()}")
            try:
                status = gateway.status()
                if status["servers"] and all(s["state"] != "starting" for s in status["servers"].values()):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"gateway did not settle within 60 s: {gateway.log()}")
            time.sleep(0.1)
        yield gateway, recorded, home
    finally:
        stop_gateway(gateway)


def exposed_tools(recorded: Recorded) -> set[str]:
    return {
        f"{server}{SEPARATOR}{tool['name']}"
        for server, entry in recorded.catalogs.items()
        for tool in entry["catalog"]["tools"]
    }


def session_lane(home: Path) -> list[dict[str, Any]]:
    """The scripted session as recorded: the lane with the most exchanges, in recorded order across
    servers (servers of one state group, like filesystem and git, key on each other's changes)."""
    copy = Cassette(home / "cassettes" / "default", create=False, readonly=True)
    try:
        entries = [entry for _, entry in copy.store.items("exchanges")]
    finally:
        copy.close()
    lanes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        lanes[entry.get("lane", "")].append(entry)
    return [e for e in max(lanes.values(), key=len) if e["method"] in ("tools/call", "resources/read", "prompts/get")]


async def _all_tools(client: Client) -> list[types.Tool]:
    tools, cursor = [], None
    for _ in range(50):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def test_bare_serve_replays_the_embedded_cassette_without_starting_anything(embedded):
    gateway, recorded, home = embedded
    status = gateway.status()
    assert status["mode"] == "replay"
    assert sorted(status["servers"]) == sorted(recorded.catalogs)
    assert len(status["servers"]) >= 10
    for name, info in status["servers"].items():
        assert info["state"] == "ready", (name, info)
        assert info["pid"] is None, (name, info)
    assert status["tools"] == len(exposed_tools(recorded))
    # Its start-up lines are written once uvicorn has started listening, so /status may answer (and say
    # "ready") a moment before they are.
    deadline = time.monotonic() + 10
    while "no server process is started" not in gateway.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "no server process is started" in gateway.log()
    # The call log of the replay is kept with the cassette it plays (runs/<stamp>-replay/), not in it,
    # and no cassette of its own appears beside it.
    assert [p.name for p in (home / "cassettes").iterdir()] == ["default"]
    assert [p.name.endswith("-replay") for p in (home / "cassettes" / "default" / "runs").iterdir()] == [True]


@pytest.mark.parametrize("era", ERAS)
def test_tools_list_in_both_eras(embedded, era):
    gateway, recorded, _ = embedded

    async def go() -> list[types.Tool]:
        with anyio.fail_after(30):
            async with Client(f"{gateway.url}?run=list-{era}", mode=era) as client:
                return await _all_tools(client)

    tools = anyio.run(go)
    names = [t.name for t in tools]
    assert len(names) == len(set(names))
    assert set(names) == exposed_tools(recorded)
    by_name = {
        f"{server}{SEPARATOR}{tool['name']}": tool
        for server, entry in recorded.catalogs.items()
        for tool in entry["catalog"]["tools"]
    }
    for tool in tools:
        assert tool.input_schema == by_name[tool.name]["inputSchema"], tool.name


@pytest.mark.parametrize("era", ERAS)
def test_recorded_calls_replay_exactly(embedded, era):
    gateway, recorded, home = embedded
    chosen = session_lane(home)
    assert len({e["server"] for e in chosen}) >= 9 and len(chosen) >= 100, [e["server"] for e in chosen]
    tools = exposed_tools(recorded)
    assert all(f"{e['server']}{SEPARATOR}{e['params']['name']}" in tools for e in chosen if e["method"] == "tools/call")
    before = digest(home / "cassettes" / "default" / "data.mdb")

    async def go() -> list[Any]:
        with anyio.fail_after(120):
            async with Client(f"{gateway.url}?run=replay-{era}", mode=era) as client:
                return [await ask(client, entry) for entry in chosen]

    replayed = anyio.run(go)
    taken: dict[str, int] = defaultdict(int)  # a run takes the answers of one key in recorded order
    for entry, got in zip(chosen, replayed, strict=True):
        answers = recorded.exchanges[entry["key"]]
        expected = answers[min(taken[entry["key"]], len(answers) - 1)]
        taken[entry["key"]] += 1
        assert got == expected_answer(expected), (entry["server"], entry["params"])
    assert digest(home / "cassettes" / "default" / "data.mdb") == before  # a replay never writes what it plays


def newcomer_requests(recorded: Recorded) -> list[dict[str, Any]]:
    """What a newcomer may ask in any order: every distinct request recorded at the state a run starts
    in that changes nothing (calls to stateless servers, read-only tools, resource reads, prompts)."""
    chosen, seen = [], set()
    for entries in recorded.by_server.values():
        for entry in entries:
            if entry["method"] not in ("tools/call", "resources/read", "prompts/get") or entry["key"] in seen:
                continue
            if entry.get("history") == "" and not entry.get("changes_state"):
                seen.add(entry["key"])
                chosen.append(recorded.exchanges[entry["key"]][0])  # a fresh run gets the first recorded answer
    return chosen


async def ask(client: Client, entry: dict[str, Any]) -> Any:
    params = entry["params"]
    try:
        if entry["method"] == "tools/call":
            return dump(
                await client.call_tool(f"{entry['server']}{SEPARATOR}{params['name']}", params.get("arguments") or {})
            )
        if entry["method"] == "resources/read":
            return dump(await client.read_resource(params["uri"]))
        return dump(await client.get_prompt(f"{entry['server']}{SEPARATOR}{params['name']}", params.get("arguments")))
    except MCPError as exc:
        return {"code": exc.code, "message": exc.message}


def expected_answer(entry: dict[str, Any]) -> Any:
    if "error" in entry:
        return {"code": entry["error"]["code"], "message": entry["error"]["message"]}
    model = {
        "tools/call": types.CallToolResult,
        "resources/read": types.ReadResourceResult,
        "prompts/get": types.GetPromptResult,
    }[entry["method"]]
    return dump(model.model_validate(entry["result"]))


@pytest.mark.parametrize("era", ERAS)
def test_a_newcomer_is_answered_in_any_order_without_a_run_id(embedded, era):
    gateway, recorded, _ = embedded
    chosen = newcomer_requests(recorded)
    methods = {e["method"] for e in chosen}
    assert len(chosen) >= 40 and methods == {"tools/call", "resources/read", "prompts/get"}, (len(chosen), methods)
    assert len({e["server"] for e in chosen}) >= 9

    async def go() -> list[Any]:
        with anyio.fail_after(120):
            async with Client(gateway.url, mode=era) as client:  # no ?run=: a careless newcomer
                return [await ask(client, entry) for entry in reversed(chosen)]

    answers = anyio.run(go)
    for entry, got in zip(reversed(chosen), answers, strict=True):
        assert got == expected_answer(entry), (entry["server"], entry["method"], entry["params"])


@pytest.mark.parametrize("era", ERAS)
def test_a_newcomers_first_guesses_are_answered(embedded, era):
    """The calls scripts/default_session.py lists as a newcomer's first guesses, untagged, last first."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from default_session import newcomer_guesses
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    gateway, _, _ = embedded
    guesses = list(reversed(newcomer_guesses()))
    assert len({step.target.split(SEPARATOR)[0] for step in guesses}) >= 7

    async def go() -> list[Any]:
        out = []
        with anyio.fail_after(60):
            async with Client(gateway.url, mode=era) as client:
                for step in guesses:
                    try:
                        out.append(dump(await client.call_tool(step.target, step.args)))
                    except MCPError as exc:
                        out.append({"error": exc.message})
        return out

    for step, answer in zip(guesses, anyio.run(go), strict=True):
        assert "error" not in answer and answer.get("content"), (step.target, answer)
