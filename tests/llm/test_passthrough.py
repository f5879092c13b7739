"""The gateway's /v1 passthrough with the real `openai` client against a scripted model
over HTTP: recorded with the key kept out of the cassette, replayed with the model stopped
(same answers, same stream chunks, the 500 too, FIFO per run), and a miss that says what differs."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest

from mcpgw.cassette.cassette import Cassette
from tests.conftest import misbehaving_entry
from tests.inprocess import call_records, start_inprocess
from tests.llm.scripted_model import ScriptedModel

FIXTURE = "version: 1\nservers:\n" + misbehaving_entry("fx")
SECRET = "sk-test-Zq81-never-in-the-cassette"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "fx__echo",
            "description": "echo",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
]
SCRIPT = {
    ("tc", "alpha"): [{"tool_calls": [["fx__echo", {"text": "hi"}]]}, {"text": "alpha done"}],
    ("tc", "beta"): [{"text": "streamed answer", "tool_calls": [["fx__echo", {"text": "streamed"}]]}] * 2,
    ("tc", "gamma"): [{"status": 500}, {"text": "after the failure"}],
    ("tc", "delta"): [{"tool_calls": [["fx__echo", "{not json"]]}],
    ("tc", "echo"): [{"text": "first"}, {"text": "second"}],
}


def conversation(marker: str, *more: dict) -> list[dict]:
    return [{"role": "user", "content": f"task {marker}"}, *more]


def exchanges(client: openai.OpenAI, base: str) -> dict:
    """The same requests, in the same order, in record and in replay."""
    out: dict = {}
    first = client.chat.completions.create(model="scripted-1", messages=conversation("alpha"), tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    out["tool_call"] = (call.function.name, call.function.arguments)
    follow = conversation(
        "alpha",
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "hi"},
    )
    out["text"] = (
        client.chat.completions.create(model="scripted-1", messages=follow, tools=TOOLS).choices[0].message.content
    )
    body = {"model": "scripted-1", "messages": conversation("beta"), "tools": TOOLS, "stream": True}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, headers={"X-Run-Id": "r1"}, timeout=10) as r:
        out["stream_bytes"] = r.read()
    stream = client.chat.completions.create(model="scripted-1", messages=conversation("beta"), tools=TOOLS, stream=True)
    out["stream_text"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="scripted-1", messages=conversation("gamma"), tools=TOOLS)
    out["500"] = failed.value.status_code
    out["after_500"] = (
        client.chat.completions.create(model="scripted-1", messages=conversation("gamma"), tools=TOOLS)
        .choices[0]
        .message.content
    )
    bad = client.chat.completions.create(model="scripted-1", messages=conversation("delta"), tools=TOOLS)
    out["malformed"] = bad.choices[0].message.tool_calls[0].function.arguments
    out["fifo"] = [
        client.chat.completions.create(model="scripted-1", messages=conversation("echo"), tools=TOOLS)
        .choices[0]
        .message.content
        for _ in range(2)
    ]
    out["models"] = [m.id for m in client.models.list()]
    return out


def test_model_exchanges_record_and_replay_without_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPGW_TEST_MODEL_KEY", SECRET)
    model = ScriptedModel(SCRIPT).start()
    gateway = start_inprocess(
        tmp_path / "rec",
        FIXTURE,
        "--mode",
        "record",
        "--llm-base-url",
        model.base_url,
        "--llm-key-env",
        "MCPGW_TEST_MODEL_KEY",
    )
    try:
        client = openai.OpenAI(
            base_url=gateway.base + "/v1", api_key="anything", max_retries=0, default_headers={"X-Run-Id": "r1"}
        )
        recorded = exchanges(client, gateway.base)
    finally:
        gateway.stop()
        model.stop()
    assert recorded["tool_call"] == ("fx__echo", '{"text": "hi"}')
    assert recorded["text"] == "alpha done" and recorded["after_500"] == "after the failure"
    assert recorded["stream_text"] == "streamed answer" and recorded["stream_bytes"].endswith(b"data: [DONE]\n\n")
    assert recorded["malformed"] == "{not json" and recorded["fifo"] == ["first", "second"]
    assert recorded["models"] == ["scripted-1"]
    assert {s["authorization"] for s in model.seen} == {f"Bearer {SECRET}"}  # the gateway's key, not the client's
    cassette = tmp_path / "rec" / "cassettes" / "test"
    assert SECRET.encode() not in (cassette / "data.mdb").read_bytes()

    replay = start_inprocess(tmp_path / "rec", FIXTURE, "--mode", "replay", "--log-cassette", "log")
    try:
        client = openai.OpenAI(
            base_url=replay.base + "/v1", api_key="anything", max_retries=0, default_headers={"X-Run-Id": "r1"}
        )
        assert exchanges(client, replay.base) == recorded
        # A conversation that left the recording: the miss names the message that differs.
        changed = conversation(
            "alpha", {"role": "assistant", "content": "something else"}, {"role": "user", "content": "go on"}
        )
        with pytest.raises(openai.ConflictError) as miss:
            client.chat.completions.create(model="scripted-1", messages=changed, tools=TOOLS)
        text = miss.value.message
        assert "model replay miss in run 'r1'" in text and "message 2 differs" in text, text
        assert miss.value.type == "replay_miss"
        # The SDK's default retries (409 is retried twice) are told not to ask again.
        sent: list[str] = []
        counting = httpx.Client(event_hooks={"request": [lambda request: sent.append(request.url.path)]})
        retrying = openai.OpenAI(
            base_url=replay.base + "/v1", api_key="anything", http_client=counting, default_headers={"X-Run-Id": "r1"}
        )
        with pytest.raises(openai.ConflictError) as deep:
            retrying.chat.completions.create(model="scripted-1", messages=changed, tools=TOOLS)
        assert sent == ["/v1/chat/completions"], sent
        assert deep.value.response.headers["x-should-retry"] == "false"
    finally:
        replay.stop()


def test_hybrid_answers_what_is_recorded_and_records_what_is_not(tmp_path):
    model = ScriptedModel(
        {("tc", "alpha"): [{"tool_calls": [["fx__echo", {"text": "hi"}]]}], ("tc", "omega"): [{"text": "new"}]}
    ).start()
    try:
        gateway = start_inprocess(tmp_path, FIXTURE, "--mode", "record", "--llm-base-url", model.base_url)
        try:
            client = openai.OpenAI(base_url=gateway.base + "/v1", api_key="x", max_retries=0)
            client.chat.completions.create(model="scripted-1", messages=conversation("alpha"), tools=TOOLS)
        finally:
            gateway.stop()
        seen = len(model.seen)
        hybrid = start_inprocess(
            tmp_path, FIXTURE, "--mode", "hybrid", "--llm-base-url", model.base_url, "--log-cassette", "log"
        )
        try:
            client = openai.OpenAI(base_url=hybrid.base + "/v1", api_key="x", max_retries=0)
            again = client.chat.completions.create(model="scripted-1", messages=conversation("alpha"), tools=TOOLS)
            assert again.choices[0].message.tool_calls[0].function.name == "fx__echo" and len(model.seen) == seen
            fresh = client.chat.completions.create(model="scripted-1", messages=conversation("omega"), tools=TOOLS)
            assert fresh.choices[0].message.content == "new" and len(model.seen) == seen + 1
        finally:
            hybrid.stop()
    finally:
        model.stop()
    cassette = Cassette(tmp_path / "cassettes" / "test", create=False, readonly=True)
    recorded = cassette.load().by_server["@model"]
    cassette.close()
    assert ["omega" in json.dumps(e["params"]) for e in recorded] == [False, True]  # the miss was recorded


def test_live_without_a_model_endpoint_says_how_to_configure_it(tmp_path):
    gateway = start_inprocess(tmp_path, FIXTURE, "--mode", "live")
    try:
        response = httpx.post(gateway.base + "/v1/chat/completions", json={"model": "m", "messages": []}, timeout=10)
        assert response.status_code == 503 and "--llm-base-url" in response.json()["error"]["message"]
        bad = httpx.post(gateway.base + "/v1/chat/completions", content=b"{oops", timeout=10)
        assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]
        page = httpx.post(
            gateway.base + "/v1/chat/completions",
            json={"model": "m", "messages": []},
            headers={"Origin": "https://evil.example"},
            timeout=10,
        )
        assert page.status_code == 403 and "Origin" in page.json()["error"]["message"]  # the HTTP guard refuses first
        local = httpx.post(
            gateway.base + "/v1/chat/completions",
            json={"model": "m", "messages": []},
            headers={"Origin": "http://localhost:3000"},
            timeout=10,
        )
        assert local.status_code == 503
    finally:
        gateway.stop()


def test_a_model_request_whose_client_leaves_is_cancelled_upstream(tmp_path):
    """A client that gives up on a slow model (its own timeout, Ctrl-C) takes its model request with it: the
    gateway cancels the request to the model endpoint (nobody would read the answer, and the endpoint bills
    for it) and logs why, instead of waiting on it, and keeping its own shutdown waiting, for nobody."""
    script = {
        ("mcpbench", "quiet"): [{"hold": 60}],
        ("mcpbench", "trickle"): [{"hold": 60}],
        ("mcpbench", "halfway"): [{"stream_hold": 60}],
    }
    with ScriptedModel(script) as model:
        gateway = start_inprocess(tmp_path, FIXTURE, "--mode", "live", "--llm-base-url", model.base_url)
        try:
            for marker, stream in (("quiet", False), ("trickle", True)):
                body = {"model": "scripted-1", "messages": conversation(marker), "stream": stream}
                with pytest.raises(httpx.TimeoutException):
                    httpx.post(gateway.base + "/v1/chat/completions", json=body, timeout=1)
            # A client that leaves in the middle of a streamed answer: the model's stream is closed too.
            body = {"model": "scripted-1", "messages": conversation("halfway"), "stream": True}
            with httpx.stream("POST", gateway.base + "/v1/chat/completions", json=body, timeout=10) as response:
                first = next(response.iter_lines())
                assert first.startswith("data:") and "thinking" in first
            deadline = time.monotonic() + 20
            while model.abandoned < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert model.abandoned == 3  # every request to the model was closed long before its 60 s
            records = []
            while len(records) < 3 and time.monotonic() < deadline:
                records = [r for r in call_records(gateway) if r.get("server") == "@model"]
                time.sleep(0.05)
        finally:
            gateway.stop()
    assert [(r["stream"], r["status"], r["outcome"]) for r in records] == [(False, 499, "live")] + [
        (True, 499, "live")
    ] * 2
    assert all("closed its connection before the model answered" in r["error"] for r in records[:2])
    assert "during the model's streamed answer" in records[2]["error"]
