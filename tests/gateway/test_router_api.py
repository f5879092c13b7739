"""mcprouter's REST API (`/v1/list-servers`, `/v1/get-server`, `/v1/list-tools`, `/v1/call-tool`) against
real servers (npm server-memory, PyPI mcp-server-time) through a recording gateway, then a replaying one
with PATH stripped (no server can start): the same answers; a call recorded through the API replays
through /mcp and the reverse; the call log says which endpoint; the token, Host and Origin checks and
the unknown-server 404 apply to every route."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from mcp import Client

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import start_gateway, stop_gateway
from tests.gateway.test_bad_input import run

pytestmark = pytest.mark.real

CONFIG = """
version: 1
servers:
  memory:
    title: "Memory"
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
    env: {MEMORY_FILE_PATH: "${RUN_STATE_DIR}/memory.json"}
    pin: {registry: npm, package: "@modelcontextprotocol/server-memory", version: "2026.8.31", repo: "https://github.com/modelcontextprotocol/servers"}
    flags: [stateful]
  time:
    title: "Time"
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
    flags: [stateless]
"""
ROUTES = ("/v1/list-servers", "/v1/get-server", "/v1/list-tools", "/v1/call-tool")
ADA = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}
TOKEN = "router-api-test-token-0123456789"


def post(base: str, path: str, body: dict, run: str | None = None, **headers: str) -> httpx.Response:
    if run:
        headers["X-Run-Id"] = run
    return httpx.post(base + path, json=body, headers=headers, timeout=60)


def answers(base: str) -> dict:
    """mcprouter's four calls, in the order a harness makes them (run rA); the same in record and replay."""
    out = {}
    out["servers"] = post(base, "/v1/list-servers", {"page": 1, "limit": 10}).json()
    out["server"] = post(base, "/v1/get-server", {"name": "memory", "author_name": "modelcontextprotocol"}).json()
    out["tools"] = post(base, "/v1/list-tools", {"server": "memory"}).json()
    out["time_tools"] = post(base, "/v1/list-tools", {"server": "Time"}).json()  # the title works as the key too
    out["create"] = post(
        base, "/v1/call-tool", {"server": "memory", "name": "create_entities", "arguments": ADA}, "rA"
    ).json()
    out["graph"] = post(base, "/v1/call-tool", {"server": "memory", "name": "read_graph", "arguments": {}}, "rA").json()
    out["convert"] = post(
        base,
        "/v1/call-tool",
        {
            "server": "time",
            "name": "convert_time",
            "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        },
        "rA",
    ).json()
    out["unknown_tool"] = post(
        base, "/v1/call-tool", {"server": "memory", "name": "read_graf", "arguments": {}}, "rA"
    ).json()
    return out


def through_mcp(url: str, run_id: str) -> list[str]:
    """create_entities then read_graph through /mcp with the SDK client: the texts it gets."""

    async def go():
        with anyio.fail_after(60):
            async with Client(f"{url}?run={run_id}", mode="legacy") as client:
                created = await client.call_tool("memory__create_entities", ADA)
                graph = await client.call_tool("memory__read_graph", {})
                return [created.content[0].text, graph.content[0].text]

    return run(go)


def through_api(base: str, run: str) -> list[str]:
    texts = []
    for name, arguments in (("create_entities", ADA), ("read_graph", {})):
        answer = post(base, "/v1/call-tool", {"server": "memory", "name": name, "arguments": arguments}, run).json()
        assert answer["code"] == 0, answer
        texts.append(answer["data"]["content"][0]["text"])
    return texts


def test_the_four_calls_record_then_replay_with_no_server_process(tmp_path, monkeypatch):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "record")
    try:
        recorded = answers(gateway.base)
        api_then = through_api(gateway.base, "rC")  # recorded through the API, replayed through /mcp below
        mcp_then = through_mcp(gateway.url, "rB")  # recorded through /mcp, replayed through the API below
    finally:
        stop_gateway(gateway)

    servers = recorded["servers"]
    assert servers["code"] == 0 and servers["message"] == "ok"
    rows = {row["server_key"]: row for row in servers["data"]["servers"]}
    assert sorted(rows) == ["memory", "time"]
    assert rows["memory"]["title"] == "Memory" and rows["memory"]["author_name"] == "modelcontextprotocol"
    assert set(rows["time"]) == {
        "created_at",
        "updated_at",
        "deleted_at",
        "name",
        "author_name",
        "title",
        "description",
        "content",
        "server_key",
        "config_name",
    }  # mcprouter's model.Server, field for field
    assert recorded["server"]["data"] == rows["memory"]
    names = {t["name"] for t in recorded["tools"]["data"]["tools"]}
    assert {"create_entities", "read_graph", "search_nodes"} <= names and not any("__" in n for n in names)
    assert {t["name"] for t in recorded["time_tools"]["data"]["tools"]} == {"get_current_time", "convert_time"}
    assert recorded["create"]["code"] == 0 and "Ada" in recorded["create"]["data"]["content"][0]["text"]
    assert "wrote the first program" in recorded["graph"]["data"]["content"][0]["text"]
    assert json.loads(recorded["convert"]["data"]["content"][0]["text"])["target"]["datetime"].startswith("2")
    assert recorded["unknown_tool"]["code"] == -1 and "read_graph" in recorded["unknown_tool"]["message"]
    assert api_then[0] == mcp_then[0] and api_then[1] == mcp_then[1]  # each run has a fresh graph of its own

    logged = [c for c in iter_calls(gateway.cassettes / "test") if c["run_id"] == "rA"]
    assert [(c["endpoint"], c["server"], c["tool"], c["source"]) for c in logged[:3]] == [
        ("/v1/call-tool", "memory", "create_entities", "live"),
        ("/v1/call-tool", "memory", "read_graph", "live"),
        ("/v1/call-tool", "time", "convert_time", "live"),
    ]
    assert logged[3]["outcome"] == "rejected" and logged[3]["endpoint"] == "/v1/call-tool"

    monkeypatch.setenv("PATH", "/nonexistent")  # nothing could start npx or uvx now
    replay = start_gateway(tmp_path, CONFIG, "--mode", "replay", "--log-cassette", "log")
    try:
        assert answers(replay.base) == recorded
        assert through_api(replay.base, "rB") == mcp_then  # recorded through /mcp
        assert through_mcp(replay.url, "rC") == api_then  # recorded through the API
        missed = post(
            replay.base,
            "/v1/call-tool",
            {"server": "memory", "name": "search_nodes", "arguments": {"query": "Ada"}},
            "rA",
        ).json()
        assert missed["code"] == -1 and "replay" in missed["message"].lower(), missed  # never recorded: a miss, said
    finally:
        stop_gateway(replay)
    replayed = [c for c in iter_calls(replay.cassettes / "log") if c["endpoint"] == "/v1/call-tool"]
    assert {c["run_id"] for c in replayed} == {"rA", "rB"}
    assert {c["source"] for c in replayed if c["outcome"] == "ok"} == {"recorded"}


def test_token_host_origin_and_unknown_servers_on_every_route(tmp_path, monkeypatch):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "record", "--servers", "time")
    try:
        post(
            gateway.base,
            "/v1/call-tool",
            {
                "server": "time",
                "name": "convert_time",
                "arguments": {"source_timezone": "UTC", "time": "09:30", "target_timezone": "Europe/Paris"},
            },
            "r1",
        )
    finally:
        stop_gateway(gateway)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("MCPGW_TEST_TOKEN", TOKEN)
    good = {"Authorization": f"Bearer {TOKEN}"}
    bodies = {
        "/v1/list-servers": {},
        "/v1/get-server": {"name": "time"},
        "/v1/list-tools": {"server": "time"},
        "/v1/call-tool": {
            "server": "time",
            "name": "convert_time",
            "arguments": {"source_timezone": "UTC", "time": "09:30", "target_timezone": "Europe/Paris"},
        },
    }
    replay = start_gateway(
        tmp_path,
        CONFIG,
        "--mode",
        "replay",
        "--log-cassette",
        "log",
        "--auth-token-env",
        "MCPGW_TEST_TOKEN",
        token=TOKEN,
    )
    base = replay.base
    try:
        for path in ROUTES:
            refused = post(base, path, bodies[path])
            assert refused.status_code == 401, path
            assert refused.json() == {
                "code": -2,
                "message": "missing or wrong bearer token (Authorization: Bearer <token>)",
            }
            assert post(base, path, bodies[path], Authorization="Bearer wrong-token-0000000000").status_code == 401
            assert post(base, path, bodies[path], Authorization=TOKEN).status_code == 401  # no scheme
            ok = post(base, path, bodies[path], "r1", **good)
            assert ok.status_code == 200 and ok.json()["code"] == 0, (path, ok.text)
            # a DNS-rebinding page: its Host names another site; a foreign page's Origin
            rebound = post(base, path, bodies[path], Host="evil.example", **good)
            assert rebound.status_code == 421 and rebound.json()["code"] == -1 and "Host" in rebound.json()["message"]
            assert post(base, path, bodies[path], Origin="https://evil.example", **good).status_code == 403
        for path in ("/v1/get-server", "/v1/list-tools", "/v1/call-tool"):
            body = {"name": "tmie"} if path == "/v1/get-server" else {**bodies[path], "server": "tmie"}
            missing = post(base, path, body, **good)
            assert missing.status_code == 404, (path, missing.text)
            assert missing.json() == {"code": -1, "message": "no server 'tmie' behind this gateway; nearest: time"}
        # Bad input: one line in mcprouter's envelope, never a traceback.
        no_server = post(base, "/v1/call-tool", {"name": "convert_time"}, **good)
        assert no_server.status_code == 400 and no_server.json()["message"].startswith('"server" is required')
        bad_args = post(base, "/v1/call-tool", {"server": "time", "name": "convert_time", "arguments": [1]}, **good)
        assert bad_args.status_code == 400 and "object" in bad_args.json()["message"]
        (refused,) = [c for c in iter_calls(replay.cassettes / "log") if c["arguments"] == [1]]  # the agent made it
        assert refused["outcome"] == "rejected" and refused["tool"] == "convert_time" and refused["server"] == "time"
        assert refused["endpoint"] == "/v1/call-tool" and refused["validation"]["valid"] is False
        not_json = httpx.post(
            base + "/v1/list-tools", content=b"{oops", headers={**good, "content-type": "application/json"}, timeout=10
        )
        assert not_json.status_code == 400 and "not JSON" in not_json.json()["message"]
        form = httpx.post(base + "/v1/list-tools", content=b"server=time", headers=good, timeout=10)
        assert form.status_code == 415
        deep = httpx.post(
            base + "/v1/list-tools",
            content=b"[" * 100_000 + b"]" * 100_000,
            headers={**good, "content-type": "application/json"},
            timeout=10,
        )
        assert deep.status_code == 400 and deep.json()["code"] == -1
        # Every POST body has /mcp's 4 MiB cap: mcprouter's API (in its envelope) and the model routes too.
        big = b'{"server": "' + b"x" * (5 * 1024 * 1024) + b'"}'
        for path in ("/v1/call-tool", "/v1/chat/completions", "/openai/deployments/gpt-4o/chat/completions"):
            over = httpx.post(
                base + path, content=big, headers={**good, "content-type": "application/json"}, timeout=30
            )
            assert over.status_code == 413 and "4194304-byte limit" in over.text, (path, over.text[:200])
        assert over.status_code == 413 and "error" in over.json()
        over = httpx.post(
            base + "/v1/list-tools", content=big, headers={**good, "content-type": "application/json"}, timeout=30
        )
        assert over.json()["code"] == -1
        # The model routes and unknown /v1 paths answer as before: no path is shared.
        assert httpx.post(base + "/v1/nothing-here", json={}, headers=good, timeout=10).status_code == 404
        assert httpx.get(base + "/v1/list-tools", headers=good, timeout=10).status_code == 405
        chat = httpx.post(base + "/v1/chat/completions", json={"model": "m", "messages": []}, headers=good, timeout=10)
        assert chat.status_code == 409 and chat.json()["error"]["type"] == "replay_miss"
    finally:
        stop_gateway(replay)
