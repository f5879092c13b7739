"""Spans of call-log records, sent by the SDK's OTLP/HTTP exporter to a receiver decoding OTLP protobuf:
names and attributes as OpenTelemetry's MCP/GenAI conventions publish them, one trace per lane, recorded
times, secrets masked, content only when asked for, a failing collector said once, the queue bounded."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.store import CassetteStore
from mcpgw.recorder.calllog import CallLog
from mcpgw.telemetry.observed import ObservedCallLog, mask_of
from mcpgw.telemetry.otlp_exporter import otlp_exporter
from mcpgw.telemetry.spans import epoch_ns
from mcpgw.telemetry.tracing import Tracing
from tests.telemetry.receiver import Receiver

SECRET = "sk-test-7c1d2e3f4a5b6c7d"


def tool_record(lane: str, started: str, name: str = "time__convert", **more):
    record = {
        "seq": None,
        "run_id": lane,
        "session_id": "sess-1",
        "lane": lane,
        "started_at": started,
        "ended_at": None,
        "latency_ms": 12.5,
        "client_name": "test",
        "protocol_version": "2025-06-18",
        "server": "time",
        "tool": name.split("__")[-1],
        "exposed_name": name,
        "arguments": {"city": "Oslo"},
        "known_tool": True,
        "validation": {"valid": True, "errors": []},
        "output_validation": None,
        "outcome": "ok",
        "is_error": False,
        "error": None,
        "result_digest": "d1",
        "cassette_key": "k1",
        "source": "replay",
        "input_schema_digest": "s1",
        "upstream_ms": 10.0,
        "endpoint": "/mcp",
    }
    record.update(more)
    return record


def model_record(lane: str, started: str):
    return {
        "seq": None,
        "run_id": lane,
        "session_id": "sess-1",
        "lane": lane,
        "started_at": started,
        "latency_ms": 40.0,
        "server": "@model",
        "method": "/v1/chat/completions",
        "model": "scripted-1",
        "stream": False,
        "outcome": "recorded",
        "status": 200,
        "is_error": False,
        "error": None,
        "cassette_key": "m1",
        "source": "live",
        "tokens": {"prompt": 30, "completion": 7, "total": 37},
        "finish_reasons": ["tool_calls"],
    }


def test_one_trace_per_lane_with_recorded_times_and_the_conventions_names():
    with Receiver() as receiver:
        tracing = Tracing(otlp_exporter(receiver.url))
        records = [
            model_record("a", "2026-11-28T10:00:00.000+00:00"),
            tool_record("a", "2026-11-28T10:00:00.050+00:00"),
            model_record("b", "2026-11-28T10:00:01.000+00:00"),
            tool_record("a", "2026-11-28T10:00:00.100+00:00", outcome="tool_error", is_error=True),
        ]
        for record in records:
            tracing.observe(record)
        tracing.close()
        receiver.wait_for(lambda r: len(r.spans) == 6)
    spans = receiver.spans
    roots = {s["name"]: s for s in spans if s["parent_id"] is None}
    assert set(roots) == {"run a", "run b"}
    assert roots["run a"]["trace_id"] != roots["run b"]["trace_id"]
    children_a = sorted((s for s in spans if s["parent_id"] == roots["run a"]["span_id"]), key=lambda s: s["start"])
    assert [s["name"] for s in children_a] == [
        "chat scripted-1",
        "tools/call time__convert",
        "tools/call time__convert",
    ]
    assert all(s["trace_id"] == roots["run a"]["trace_id"] for s in children_a)
    # recorded times: start as logged, end = start + latency; the root spans its children
    assert children_a[1]["start"] == epoch_ns("2026-11-28T10:00:00.050+00:00")
    assert children_a[1]["end"] - children_a[1]["start"] == 12_500_000
    assert roots["run a"]["start"] == children_a[0]["start"] and roots["run a"]["end"] == children_a[2]["end"]
    model, tool, failed = (s["attributes"] for s in children_a)
    assert model["gen_ai.operation.name"] == "chat" and model["gen_ai.request.model"] == "scripted-1"
    assert model["gen_ai.usage.input_tokens"] == 30 and model["gen_ai.usage.output_tokens"] == 7
    assert model["gen_ai.response.finish_reasons"] == ["tool_calls"] and model["mcpgw.outcome"] == "recorded"
    assert tool["mcp.method.name"] == "tools/call" and tool["gen_ai.operation.name"] == "execute_tool"
    assert tool["gen_ai.tool.name"] == "time__convert" and tool["mcp.session.id"] == "sess-1"
    assert tool["mcp.protocol.version"] == "2025-06-18" and tool["mcpgw.server"] == "time"
    assert tool["mcpgw.verdict"] == "valid" and tool["mcpgw.answer_source"] == "recorded"
    assert tool["mcpgw.cassette_key"] == "k1" and tool["mcpgw.upstream_ms"] == 10.0 and tool["mcpgw.own_ms"] == 2.5
    assert "error.type" not in tool and failed["error.type"] == "tool_error" and failed_status(children_a[2])
    assert not any(k.startswith(("gen_ai.tool.call.", "input.", "output.")) for k in tool)  # content is opt-in


def failed_status(span) -> bool:
    return span["status"] == 2  # STATUS_CODE_ERROR


def test_content_attributes_only_when_asked_and_secrets_masked_as_in_the_call_log(tmp_path: Path):
    store = CassetteStore(tmp_path / "c", create=True)
    log = CallLog(store, Redactor([SECRET], None))
    with Receiver() as receiver:
        tracing = Tracing(otlp_exporter(receiver.url), content=True, mask=mask_of(log))
        sink = ObservedCallLog(log, [tracing.observe])
        sink.append(
            tool_record(
                "a",
                "2026-11-28T10:00:00.000+00:00",
                arguments={"key": SECRET, "q": "x"},
                result=f"your key is {SECRET}",
                error=None,
            )
        )
        sink.append(
            tool_record(
                "a",
                "2026-11-28T10:00:00.020+00:00",
                outcome="upstream_error",
                is_error=True,
                error=f"server said: bad key {SECRET}",
            )
        )
        tracing.close()
        receiver.wait_for(lambda r: len(r.spans) == 3)
    store.close()
    dumped = json.dumps(receiver.spans)
    assert SECRET not in dumped
    call = next(s for s in receiver.spans if s["parent_id"] and s["start"] == epoch_ns("2026-11-28T10:00:00.000+00:00"))
    assert json.loads(call["attributes"]["gen_ai.tool.call.arguments"])["q"] == "x"
    assert "«redacted»" in call["attributes"]["gen_ai.tool.call.arguments"]
    assert "«redacted»" in call["attributes"]["gen_ai.tool.call.result"]
    failed = next(s for s in receiver.spans if s["parent_id"] and s is not call)
    assert "«redacted»" in failed["status_message"]


def test_a_collector_answering_500_is_one_warning_line_for_many_failed_batches(caplog):
    caplog.set_level(logging.INFO)
    with Receiver(mode="fail") as receiver:
        tracing = Tracing(otlp_exporter(receiver.url))
        for i in range(3):  # three batches, each refused
            tracing.observe(tool_record(f"lane{i}", "2026-11-28T10:00:00.000+00:00"))
            tracing.processor.force_flush(10_000)
        receiver.wait_for(lambda r: r.requests >= 3)
        tracing.close()
    said = [r for r in caplog.records if "traces to" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING, [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry") and r.levelno >= logging.WARNING]


def test_the_queue_is_bounded_while_the_collector_holds_every_request():
    with Receiver(mode="hold") as receiver:
        tracing = Tracing(otlp_exporter(receiver.url, timeout=1.0), max_queue=256, batch_delay_ms=10)
        for i in range(20_000):
            tracing.observe(tool_record("a", "2026-11-28T10:00:00.000+00:00", arguments={"i": i}))
        queue = tracing.processor._batch_processor._queue  # the SDK's deque: spans past its length are dropped
        assert queue.maxlen == 256 and len(queue) <= 256
        assert tracing._pending.maxlen == 256  # and the records waiting for the span maker's thread
        receiver.released.set()
        tracing.close(timeout_ms=2000)


def test_the_azure_route_and_other_model_paths_name_their_operation_and_provider():
    from mcpgw.telemetry.spans import model_span

    azure = model_span(
        {
            **model_record("a", "2026-11-28T10:00:00.000+00:00"),
            "method": "/openai/deployments/gpt-4o/chat/completions",
            "model": "gpt-4o",
        }
    )
    assert azure.name == "chat gpt-4o" and azure.attributes["gen_ai.provider.name"] == "azure.ai.openai"
    embeddings = model_span({**model_record("a", "2026-11-28T10:00:00.000+00:00"), "method": "/v1/embeddings"})
    assert embeddings.attributes["gen_ai.operation.name"] == "embeddings"
    failed = model_span(
        {**model_record("a", "2026-11-28T10:00:00.000+00:00"), "status": 500, "is_error": True, "error": "HTTP 500"}
    )
    assert failed.attributes["error.type"] == "500" and failed.error == "HTTP 500"
