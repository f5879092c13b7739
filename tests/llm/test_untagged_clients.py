"""Untagged model clients on /v1 get lanes of their own, as on /mcp: two real `openai`
clients (no run id) record the same and different conversations through the gateway,
then replay them one after the other, in the other order, interleaved and concurrently;
each gets its own recorded answers. Every exchange is in the call log."""

from __future__ import annotations

import threading

import httpx
import openai

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel
from tests.llm.test_passthrough import FIXTURE, TOOLS, conversation

# The scripted model answers the same request differently each time it is asked (as a sampled model does).
SCRIPT = {
    ("tc", "alpha"): [{"text": "alpha answer"}],
    ("tc", "beta"): [{"text": "beta answer"}],
    ("tc", "shared"): [{"text": f"shared {n}"} for n in range(1, 5)],
    ("tc", "twin"): [{"text": f"twin {n}"} for n in range(1, 5)],
}


def client(base: str, keep_alive: bool = True) -> openai.OpenAI:
    # Without keep-alive every request is a new connection, which the parent deals to the --workers workers in turn.
    http = None if keep_alive else httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=60)
    return openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, http_client=http)


def ask(c: openai.OpenAI, marker: str) -> str:
    return (
        c.chat.completions.create(model="scripted-1", messages=conversation(marker), tools=TOOLS)
        .choices[0]
        .message.content
    )


def test_untagged_openai_clients_each_replay_their_own_answers(tmp_path):
    model = ScriptedModel(SCRIPT).start()
    gateway = start_gateway(tmp_path, FIXTURE, "--mode", "record", "--llm-base-url", model.base_url)
    try:
        a, b, c, d = (client(gateway.base) for _ in range(4))
        # a and b: a first request of their own, then the same request twice each, interleaved.
        recorded = {"a": [ask(a, "alpha")], "b": [ask(b, "beta")], "c": [], "d": []}
        for name, who in (("a", a), ("b", b), ("a", a), ("b", b)):
            recorded[name].append(ask(who, "shared"))
        for name, who in (("c", c), ("c", c), ("d", d), ("d", d)):  # c and d: only ever the same request
            recorded[name].append(ask(who, "twin"))
        # The openai client (httpx) keeps the gateway's cookie: its identity, whatever connection it uses.
        assert a._client.cookies.get("mcpgw-client") and a._client.cookies.get("mcpgw-client") != b._client.cookies.get(
            "mcpgw-client"
        )
    finally:
        stop_gateway(gateway)
        model.stop()
    assert recorded == {
        "a": ["alpha answer", "shared 1", "shared 3"],
        "b": ["beta answer", "shared 2", "shared 4"],
        "c": ["twin 1", "twin 2"],
        "d": ["twin 3", "twin 4"],
    }
    log = [r for r in iter_calls(tmp_path / "cassettes" / "test") if r["server"] == "@model"]
    assert len(log) == 10 and {r["outcome"] for r in log} == {"recorded"} and {r["run_id"] for r in log} == {"default"}
    assert {r["method"] for r in log} == {"/v1/chat/completions"} and all(r["tokens"]["total"] > 0 for r in log)
    lanes = [r["lane"] for r in log]
    assert len(set(lanes)) == 4 and all(lane.startswith("default/client-") for lane in lanes)
    assert lanes[2] == lanes[4] == lanes[0] and lanes[3] == lanes[5] == lanes[1]  # a's and b's requests

    # Replay 1: b's conversation wholly before a's; c and d interleaved; started with --run: lanes under it.
    replay = start_gateway(tmp_path, FIXTURE, "--mode", "replay", "--log-cassette", "log1", "--run", "suite")
    try:
        y, x, w, z = (client(replay.base) for _ in range(4))
        got = {
            "b": [ask(y, m) for m in ("beta", "shared", "shared")],
            "a": [ask(x, m) for m in ("alpha", "shared", "shared")],
            "c": [],
            "d": [],
        }
        for name, who in (("c", w), ("d", z), ("d", z), ("c", w)):
            got[name].append(ask(who, "twin"))
        missed = None
        try:
            ask(x, "omega")
        except openai.ConflictError as exc:
            missed = exc.message
    finally:
        stop_gateway(replay)
    assert got == recorded
    assert missed is not None and "model replay miss in run 'suite/client-" in missed
    log = [r for r in iter_calls(tmp_path / "cassettes" / "log1") if r["server"] == "@model"]
    assert [r["outcome"] for r in log] == ["hit"] * 10 + ["miss"] and log[-1]["status"] == 409
    assert {r["source"] for r in log[:10]} == {"recorded"} and all(r["lane"].startswith("suite/client-") for r in log)

    # Replay 2: all four at once.
    replay = start_gateway(tmp_path, FIXTURE, "--mode", "replay", "--log-cassette", "log2")
    try:
        plans = {
            "a": ("alpha", "shared", "shared"),
            "b": ("beta", "shared", "shared"),
            "c": ("twin", "twin"),
            "d": ("twin", "twin"),
        }
        got, start = {}, threading.Barrier(4)

        def converse(name: str) -> None:
            who = client(replay.base)
            start.wait(10)
            got[name] = [ask(who, m) for m in plans[name]]

        threads = [threading.Thread(target=converse, args=(name,)) for name in plans]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        stop_gateway(replay)
    assert got["a"] == recorded["a"] and got["b"] == recorded["b"]
    # c and d asked the very same thing: whichever came first replays the first recorded twin, never a mix.
    assert sorted([got["c"], got["d"]]) == [recorded["c"], recorded["d"]]

    # Replay 3: two worker processes, every request on a new connection (so it reaches either worker):
    # each lane still lives in one worker, so each client gets its own answers in order.
    replay = start_gateway(tmp_path, FIXTURE, "--mode", "replay", "--log-cassette", "log3", "--workers", "2")
    try:
        got = {}
        for name in ("b", "a", "d", "c"):
            who = client(replay.base, keep_alive=False)
            got[name] = [ask(who, m) for m in plans[name]]
    finally:
        stop_gateway(replay)
    assert got["a"] == recorded["a"] and got["b"] == recorded["b"]
    assert sorted([got["c"], got["d"]]) == [recorded["c"], recorded["d"]]
