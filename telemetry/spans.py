"""One call-log record -> one span's shape: name, times, attributes, status.

Attribute names follow OpenTelemetry's semantic conventions for MCP and GenAI as published
(open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md and gen-ai-spans.md, status Development):
`mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`, `gen_ai.operation.name`, `gen_ai.tool.name`,
`error.type`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`/`output_tokens`,
`gen_ai.response.finish_reasons`; content only when asked for (`gen_ai.tool.call.arguments`/`.result`).
Ours are under `mcpgw.`; `openinference.span.kind` and `llm.*` token counts make Arize Phoenix draw the
spans as tool and LLM steps. Live and exported spans come from here alike, so they are the same spans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MODEL_SERVER = "@model"  # llm.passthrough.MODEL_SERVER: the server name of a model exchange's record


@dataclass
class SpanShape:
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # set: the span's status is ERROR with this description


def epoch_ns(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1e9)
    except ValueError:
        return None


def times(record: dict[str, Any]) -> tuple[int, int]:
    """(start, end) in ns since the epoch: the recorded start and the recorded latency (the call log's timings)."""
    start = epoch_ns(record.get("started_at")) or epoch_ns(record.get("ended_at")) or 0
    latency = record.get("latency_ms")
    if isinstance(latency, (int, float)):
        return start, start + int(latency * 1e6)
    return start, max(start, epoch_ns(record.get("ended_at")) or start)


def is_model(record: dict[str, Any]) -> bool:
    return record.get("server") == MODEL_SERVER


def shape(record: dict[str, Any], *, content: bool = False) -> SpanShape:
    return model_span(record, content=content) if is_model(record) else tool_span(record, content=content)


def _put(attributes: dict[str, Any], key: str, value: Any) -> None:
    """OpenTelemetry attributes are str/bool/int/float (or lists of one): None is left out, anything else is JSON."""
    if value is None:
        return
    if isinstance(value, (str, bool, int, float)):
        attributes[key] = value
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        attributes[key] = list(value)
    else:
        attributes[key] = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def answer_source(record: dict[str, Any]) -> str:
    """Where a tool call's answer came from, in the call log's words (replay.answer_sources): recorded, equivalent,
    live, simulated; miss or diverged when refused; none when the gateway refused it before any server or
    recording was asked. Logs older than the answer sources say "replay" for a recorded answer."""
    outcome = record.get("outcome")
    if outcome in ("miss", "diverged"):
        return str(outcome)
    source = record.get("source")
    if source is None:
        return "none"
    return "recorded" if source == "replay" else str(source)


def verdict(record: dict[str, Any]) -> str:
    valid = (record.get("validation") or {}).get("valid")
    return "unchecked" if valid is None else "valid" if valid else "invalid"


def tool_span(record: dict[str, Any], *, content: bool = False) -> SpanShape:
    start, end = times(record)
    name = record.get("exposed_name") or record.get("tool") or ""
    a: dict[str, Any] = {}
    _put(a, "mcp.method.name", "tools/call")
    _put(a, "gen_ai.operation.name", "execute_tool")
    _put(a, "gen_ai.tool.name", str(name))
    _put(a, "mcp.session.id", record.get("session_id") or None)
    _put(a, "mcp.protocol.version", record.get("protocol_version"))
    outcome = record.get("outcome")
    if outcome not in ("ok", None):
        _put(a, "error.type", outcome)
    _put(a, "openinference.span.kind", "TOOL")
    _put(a, "mcpgw.run_id", record.get("run_id"))
    _put(a, "mcpgw.lane", record.get("lane"))
    _put(a, "mcpgw.server", record.get("server"))
    _put(a, "mcpgw.tool", record.get("tool"))
    _put(a, "mcpgw.endpoint", record.get("endpoint"))
    _put(a, "mcpgw.client_name", record.get("client_name"))
    _put(a, "mcpgw.outcome", outcome)
    _put(a, "mcpgw.verdict", verdict(record))
    errors = (record.get("validation") or {}).get("errors") or []
    if errors:
        _put(a, "mcpgw.validation.errors", errors)
    output = record.get("output_validation")
    if isinstance(output, dict) and output.get("valid") is not None:
        _put(a, "mcpgw.output_verdict", "valid" if output["valid"] else "invalid")
    _put(a, "mcpgw.answer_source", answer_source(record))
    _put(a, "mcpgw.cassette_key", record.get("cassette_key"))
    _put(a, "mcpgw.result_digest", record.get("result_digest"))
    latency, upstream = record.get("latency_ms"), record.get("upstream_ms")  # the latency is the span's duration
    _put(a, "mcpgw.upstream_ms", upstream)
    if isinstance(latency, (int, float)):
        _put(a, "mcpgw.own_ms", round(latency - (upstream or 0.0), 3))
    if content:  # opt-in: arguments and results can carry what a user typed (secrets are masked before this)
        _put(a, "gen_ai.tool.call.arguments", record.get("arguments"))
        _put(a, "input.value", record.get("arguments"))
        _put(a, "gen_ai.tool.call.result", record.get("result"))
        _put(a, "output.value", record.get("result"))
    error = record.get("error") or ("tool error" if record.get("is_error") else None)
    return SpanShape(f"tools/call {name}".rstrip(), start, end, a, error)


def operation(path: str) -> str:
    """The GenAI operation of a model endpoint path (/v1/... or Azure's /openai/deployments/<d>/...)."""
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/completions"):
        return "text_completion"
    if path.endswith("/embeddings"):
        return "embeddings"
    if path.endswith("/responses"):
        return "chat"
    return path.rsplit("/", 1)[-1] or "chat"


def model_span(record: dict[str, Any], *, content: bool = False) -> SpanShape:  # noqa: ARG001 - no messages in the record
    start, end = times(record)
    path = str(record.get("method") or "")
    op = operation(path)
    model = record.get("model")
    a: dict[str, Any] = {}
    _put(a, "gen_ai.operation.name", op)
    _put(a, "gen_ai.provider.name", "azure.ai.openai" if "/openai/deployments/" in path else "openai")
    _put(a, "gen_ai.request.model", model)
    tokens = record.get("tokens") or {}
    _put(a, "gen_ai.usage.input_tokens", tokens.get("prompt"))
    _put(a, "gen_ai.usage.output_tokens", tokens.get("completion"))
    _put(a, "gen_ai.response.finish_reasons", record.get("finish_reasons"))
    _put(a, "http.response.status_code", record.get("status"))
    status = record.get("status")
    if record.get("is_error"):
        _put(a, "error.type", str(status) if status is not None else "error")
    _put(a, "openinference.span.kind", "LLM")
    _put(a, "llm.model_name", model)
    _put(a, "llm.token_count.prompt", tokens.get("prompt"))
    _put(a, "llm.token_count.completion", tokens.get("completion"))
    _put(a, "llm.token_count.total", tokens.get("total"))
    _put(a, "mcpgw.run_id", record.get("run_id"))
    _put(a, "mcpgw.lane", record.get("lane"))
    _put(a, "mcpgw.endpoint", path)
    _put(a, "mcpgw.outcome", record.get("outcome"))  # hit | miss | live | recorded (llm.call_record)
    _put(a, "mcpgw.answer_source", {"hit": "recorded"}.get(str(record.get("outcome")), record.get("outcome")))
    _put(a, "mcpgw.cassette_key", record.get("cassette_key"))
    _put(a, "mcpgw.stream", record.get("stream"))
    error = record.get("error") if record.get("is_error") else None
    return SpanShape(f"{op} {model}" if model else op, start, end, a, error)


def root_attributes(lane: str, run_id: str | None) -> dict[str, Any]:
    a: dict[str, Any] = {}
    _put(a, "openinference.span.kind", "CHAIN")
    _put(a, "mcpgw.run_id", run_id)
    _put(a, "mcpgw.lane", lane)
    return a
