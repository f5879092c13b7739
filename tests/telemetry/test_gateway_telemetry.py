"""A real `mcpgw serve` (tests/fixtures/misbehaving_server.py upstream, with a declared key) exporting traces to
an OTLP receiver and serving /metrics: the spans of a run, no key in them, the metrics equal to the call log's
counts (read with prometheus_client's own parser), and calls unaffected by a collector down, failing or stuck."""

from __future__ import annotations

import json
import time
from collections import Counter

import anyio
import httpx
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from mcpgw.recorder.calllog import iter_calls
from mcpgw.telemetry.spans import verdict
from tests.conftest import free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.telemetry.receiver import Receiver

API_KEY = "ak-live-0a9b8c7d6e5f4321"
CONFIG = "version: 1\nservers:\n" + misbehaving_entry("talk", extra="    env: [MY_API_KEY]\n")
DROPPED = ("traces to", "trace collector did not take")  # telemetry.otlp_exporter's, or at exit telemetry.tracing's


def calls(url: str, plan: list[tuple[str, dict]]) -> list[tuple[float, bool]]:
    """Each call's (seconds, isError); a call the gateway refuses is (seconds, None)."""

    async def go():
        took = []
        with anyio.fail_after(120):
            async with Client(url, mode="legacy") as client:
                for name, arguments in plan:
                    t0 = time.perf_counter()
                    try:
                        result = await client.call_tool(name, arguments)
                        took.append((time.perf_counter() - t0, result.is_error))
                    except Exception:  # noqa: BLE001 - an unknown tool: refused with an error
                        took.append((time.perf_counter() - t0, None))
        return took

    return anyio.run(go)


PLAN = [
    ("talk__echo", {"message": "hi"}),
    ("talk__echo", {"message": f"my key is {API_KEY}"}),
    ("talk__echo", {"mesage": "typo"}),  # audit: invalid, forwarded anyway
    ("talk__env", {"name": "MY_API_KEY"}),
    ("talk__nope", {}),
    ("talk__counter", {}),
]


def test_a_run_as_one_trace_and_metrics_equal_to_the_call_log(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", API_KEY)
    with Receiver() as receiver:
        gateway = start_gateway(
            tmp_path, CONFIG, "--otlp-endpoint", receiver.url, "--trace-content", "--log-results", "500", "--metrics"
        )
        try:
            results = calls(gateway.url + "?run=r1", PLAN)
            assert [ok for _, ok in results] == [False, False, False, False, None, False], results
            scraped = httpx.get(gateway.base + "/metrics", timeout=10)
        finally:
            stop_gateway(gateway)
        receiver.wait_for(lambda r: len(r.spans) == len(PLAN) + 1)
    records = list(iter_calls(gateway.cassettes / "test"))
    assert len(records) == len(PLAN)

    # -- traces: one run, one trace; a span per call in order; the key nowhere
    spans = receiver.spans
    roots = [s for s in spans if s["parent_id"] is None]
    assert [r["name"] for r in roots] == ["run r1"]
    children = sorted((s for s in spans if s["parent_id"]), key=lambda s: s["start"])
    assert all(s["parent_id"] == roots[0]["span_id"] and s["trace_id"] == roots[0]["trace_id"] for s in children)
    assert [s["attributes"]["gen_ai.tool.name"] for s in children] == [name for name, _ in PLAN]
    assert API_KEY not in repr(spans) and API_KEY not in gateway.log()
    env = children[3]["attributes"]
    assert env["gen_ai.tool.call.result"] == "MY_API_KEY=«redacted»" and env["mcpgw.answer_source"] == "live"
    assert children[2]["attributes"]["mcpgw.verdict"] == "invalid"
    assert children[4]["attributes"]["error.type"] == "rejected" and children[4]["status"] == 2
    assert children[0]["attributes"]["mcp.method.name"] == "tools/call"

    # -- metrics: every counter equals the call log's count
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
    counted = Counter(
        (r["server"] or "", r["tool"] or r["exposed_name"] or "", r["outcome"], verdict(r)) for r in records
    )
    served = {
        (s.labels["server"], s.labels["tool"], s.labels["outcome"], s.labels["verdict"]): s.value
        for s in families["mcpgw_tool_calls"].samples
        if s.name == "mcpgw_tool_calls_total"
    }
    assert served == dict(counted)
    own = next(
        s.value
        for s in families["mcpgw_tool_call_own_seconds"].samples
        if s.name.endswith("_count") and s.labels["server"] == "talk"
    )
    assert own == len(records)
    live = {s.labels["source"]: s.value for s in families["mcpgw_replay"].samples if s.name == "mcpgw_replay_total"}
    assert live == {"live": sum(1 for r in records if r["source"] == "live")}
    assert [(s.labels, s.value) for s in families["mcpgw_server_state"].samples] == [
        ({"server": "talk", "state": "ready"}, 1)
    ]
    assert next(iter(families["mcpgw_lanes"].samples)).value == 1


def test_metrics_sit_behind_the_auth_token(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPGW_TEST_TOKEN", "tok-123456789012345678901234")
    gateway = start_gateway(
        tmp_path, CONFIG, "--metrics", "--auth-token-env", "MCPGW_TEST_TOKEN", token="tok-123456789012345678901234"
    )
    try:
        assert httpx.get(gateway.base + "/metrics", timeout=10).status_code == 401
        scraped = httpx.get(
            gateway.base + "/metrics", timeout=10, headers={"Authorization": "Bearer tok-123456789012345678901234"}
        )
        assert scraped.status_code == 200 and "mcpgw_tool_calls" in scraped.text
        refused = {
            s.labels["reason"]: s.value
            for f in text_string_to_metric_families(scraped.text)
            if f.name == "mcpgw_edge_refusals"
            for s in f.samples
        }
        assert sum(refused.values()) >= 1, refused  # the unauthenticated scrape above
    finally:
        stop_gateway(gateway)


def test_without_the_flag_there_is_no_metrics_route(gateway_factory):
    gateway = gateway_factory(CONFIG)
    assert httpx.get(gateway.base + "/metrics", timeout=10).status_code == 404


@pytest.mark.parametrize("collector", ["down", "fail", "hold"])
def test_a_collector_down_failing_or_stuck_leaves_calls_unaffected(tmp_path, collector):
    with Receiver(mode="hold" if collector == "hold" else "fail") as receiver:
        url = f"http://127.0.0.1:{free_port()}" if collector == "down" else receiver.url
        gateway = start_gateway(tmp_path, CONFIG, "--otlp-endpoint", url)
        try:
            results = calls(
                gateway.url + "?run=r1", [("talk__echo", {"message": str(i)}) for i in range(1100)]
            )  # 3 batches
            if collector != "down":
                receiver.wait_for(lambda r: r.requests >= (1 if collector == "hold" else 2))
        finally:
            started = time.monotonic()
            stop_gateway(gateway)
            stopping = time.monotonic() - started
    assert all(is_error is False for _, is_error in results)
    took = sorted(seconds for seconds, _ in results)
    assert took[int(len(took) * 0.99)] < 1.0, took[-10:]  # nothing waits on the collector
    assert stopping < 10, stopping  # stopped by its SIGTERM (stop_gateway kills at 15 s), not held by the collector
    said = [line for line in gateway.log().splitlines() if any(words in line for words in DROPPED)]
    assert len(said) == 1, said  # stuck: its request times out (5 s), and that is said once too
    assert "Traceback" not in gateway.log()


CLIENT_TRACE, CLIENT_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def test_the_server_gets_the_call_span_in_meta_and_a_client_traceparent_is_joined(tmp_path):
    async def go(url: str) -> list[dict]:
        with anyio.fail_after(60):
            async with Client(url, mode="legacy") as client:
                plain = await client.call_tool("talk__meta", {})
                joined = await client.call_tool(
                    "talk__meta", {}, meta={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01", "custom": "kept"}
                )
        return [json.loads(r.content[0].text) for r in (plain, joined)]

    with Receiver() as receiver:
        gateway = start_gateway(tmp_path, CONFIG, "--otlp-endpoint", receiver.url)
        try:
            plain, joined = anyio.run(go, gateway.url + "?run=r2")
        finally:
            stop_gateway(gateway)
        receiver.wait_for(lambda r: len(r.spans) == 3)
    _, plain_trace, plain_span, _ = plain["traceparent"].split("-")
    _, joined_trace, joined_span, _ = joined["traceparent"].split("-")
    assert joined_trace == CLIENT_TRACE and joined["custom"] == "kept"
    spans = {s["span_id"]: s for s in receiver.spans}
    root = next(s for s in receiver.spans if s["name"] == "run r2")
    # the span the server was told of is the call's own span, under the run's root ...
    assert (
        spans[plain_span]["trace_id"] == plain_trace == root["trace_id"]
        and spans[plain_span]["parent_id"] == root["span_id"]
    )
    # ... or, when the client sent its own traceparent, under the client's span, in the client's trace
    assert spans[joined_span]["trace_id"] == CLIENT_TRACE and spans[joined_span]["parent_id"] == CLIENT_SPAN
    assert spans[joined_span]["name"] == spans[plain_span]["name"] == "tools/call talk__meta"


def test_model_exchanges_as_genai_spans_and_a_client_traceparent_header_joined(tmp_path):
    from tests.llm.scripted_model import ScriptedModel
    from tests.runs.scripts import script

    body = {
        "model": "scripted-1",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "messages": [{"role": "user", "content": "Convert the temperature of Reactor X"}],
    }
    model = ScriptedModel(script()).start()
    try:
        with Receiver() as receiver:
            gateway = start_gateway(tmp_path, CONFIG, "--otlp-endpoint", receiver.url, "--llm-base-url", model.base_url)
            try:
                first = httpx.post(gateway.base + "/v1/chat/completions?run=m1", json=body, timeout=30)
                second = httpx.post(
                    gateway.base + "/v1/chat/completions?run=m1",
                    json=body,
                    timeout=30,
                    headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"},
                )
                streamed = httpx.post(
                    gateway.base + "/v1/chat/completions?run=m1", json={**body, "stream": True}, timeout=30
                )
                assert first.status_code == second.status_code == streamed.status_code == 200, (first.text, second.text)
            finally:
                stop_gateway(gateway)
            receiver.wait_for(lambda r: len(r.spans) == 4)
    finally:
        model.stop()
    root = next(s for s in receiver.spans if s["name"] == "run m1")
    chats = sorted((s for s in receiver.spans if s["name"] == "chat scripted-1"), key=lambda s: s["start"])
    assert len(chats) == 3 and chats[2]["parent_id"] == root["span_id"] and chats[2]["attributes"]["mcpgw.stream"]
    assert chats[0]["parent_id"] == root["span_id"] and chats[0]["trace_id"] == root["trace_id"]
    assert chats[1]["parent_id"] == CLIENT_SPAN and chats[1]["trace_id"] == CLIENT_TRACE
    # the model endpoint was told of each exchange's own span (W3C traceparent header)
    told = [seen["traceparent"].split("-") for seen in model.seen]
    assert [(t[1], t[2]) for t in told] == [(c["trace_id"], c["span_id"]) for c in chats]
    a = chats[0]["attributes"]
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "scripted-1"
    assert a["gen_ai.provider.name"] == "openai" and a["mcpgw.outcome"] == "live"
    assert a["gen_ai.response.finish_reasons"] == [first.json()["choices"][0]["finish_reason"]]
    assert a["gen_ai.usage.input_tokens"] == first.json()["usage"]["prompt_tokens"] > 0


def test_replay_hits_and_misses_in_metrics_equal_the_replay_log(tmp_path, monkeypatch):
    from mcpgw.recorder.replay_logs import call_log_paths

    monkeypatch.setenv("MY_API_KEY", API_KEY)
    recording = start_gateway(tmp_path / "rec", CONFIG, "--mode", "record")
    try:
        calls(recording.url + "?run=r1", [("talk__echo", {"message": "hi"}), ("talk__counter", {})])
    finally:
        stop_gateway(recording)
    cassettes = recording.cassettes
    replaying = start_gateway(tmp_path / "rec", CONFIG, "--mode", "replay", "--metrics")
    try:
        results = calls(
            replaying.url + "?run=r1",
            [("talk__echo", {"message": "hi"}), ("talk__echo", {"message": "new"}), ("talk__counter", {})],
        )
        scraped = httpx.get(replaying.base + "/metrics", timeout=10).text
    finally:
        stop_gateway(replaying)
    # the new message is a miss; after it the run has left the recording: the next call is refused (diverged)
    assert [ok for _, ok in results] == [False, None, None], results
    records = [r for path in call_log_paths(cassettes, "test", "last") for r in iter_calls(path)]
    sources = Counter(r["outcome"] if r["outcome"] in ("miss", "diverged") else r["source"] for r in records)
    families = {f.name: f for f in text_string_to_metric_families(scraped)}
    served = {s.labels["source"]: s.value for s in families["mcpgw_replay"].samples if s.name == "mcpgw_replay_total"}
    assert served == dict(sources) and {"recorded", "miss"} <= set(served), (served, sources)
    outcomes = {
        s.labels["outcome"]: s.value for s in families["mcpgw_tool_calls"].samples if s.name == "mcpgw_tool_calls_total"
    }
    assert outcomes == dict(Counter(r["outcome"] for r in records))
