"""A model exchange as a call-log record, beside the tool calls of the same run, so
the call log shows a run's whole timeline (`mcpgw calls export`).

The record has the tool-call record's shape (recorder.calllog.FIELDS) with
server `@model`, `method` = the endpoint path, and an outcome of its own:
    hit       answered from the cassette (replay, hybrid)
    miss      not in the cassette (replay: answered 409)
    live      forwarded, not recorded (live mode; or the model was unreachable)
    recorded  forwarded and written into the cassette (record; hybrid misses)
plus the HTTP `status` the client got, the `model` asked for, whether it was
`stream`ed, and `tokens` when the answer carried `usage`. The evaluator skips
these records where it counts tool calls (evaluator.calllog.is_model_record).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from mcpgw.llm.answer import ModelAnswer

OUTCOMES = ("hit", "miss", "live", "recorded")


def model_record(
    *,
    server: str,
    path: str,
    body: dict[str, Any] | None,
    run_id: str,
    lane: str,
    session_id: str,
    client_name: str | None,
    started_at: float,
    started: float,
    outcome: str,
    answer: ModelAnswer | None = None,
    status: int | None = None,
    error: str | None = None,
    cassette_key: str | None = None,
    traceparent: str | None = None,
    span_id: str | None = None,
) -> dict[str, Any]:
    """`started_at` is wall time, `started` the perf_counter reading of the same moment."""
    status = answer.status if answer is not None else status
    record: dict[str, Any] = {
        "seq": None,
        "run_id": run_id,
        "session_id": session_id,
        "lane": lane,  # seq first: cassette.store.with_seq
        "started_at": _iso(started_at),
        "ended_at": _iso(time.time()),
        "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        "client_name": client_name,
        "protocol_version": None,
        "server": server,
        "tool": None,
        "exposed_name": None,
        "method": path,
        "model": (body or {}).get("model"),
        "stream": bool((body or {}).get("stream")),
        "outcome": outcome,
        "status": status,
        "is_error": status is None or status >= 400,
        "error": error if error is not None else _error_of(answer),
        "cassette_key": cassette_key,
        "source": "recorded" if outcome == "hit" else "missed" if outcome in ("miss", "diverged") else "live",
    }
    tokens = usage_of(answer) if answer is not None else None
    if tokens is not None:
        record["tokens"] = tokens
    if traceparent:  # the client's W3C trace context (header): a trace of the run puts this exchange under it
        record["client_traceparent"] = traceparent
    if span_id:  # the span id the model endpoint was told of (traces on): the exchange's span takes it
        record["span_id"] = span_id
    finished = finish_reasons(answer) if answer is not None else None
    if finished:  # why the model stopped (tool_calls, stop, length): what a trace of the run shows per turn
        record["finish_reasons"] = finished
    return record


def finish_reasons(answer: ModelAnswer) -> list[str] | None:
    """The `finish_reason` of each choice of a plain answer, or those the streamed chunks carried, in order."""
    if isinstance(answer.body, dict) and isinstance(answer.body.get("choices"), list):
        found = [c.get("finish_reason") for c in answer.body["choices"] if isinstance(c, dict)]
    else:  # from the end: the reason comes in the last chunks (every chunk names the key, null until then)
        found = []
        for data in reversed(answer.events or ()):
            if '"finish_reason"' not in data:
                continue
            try:
                chunk = json.loads(data)
            except ValueError:
                continue
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            found = [c.get("finish_reason") for c in choices or () if isinstance(c, dict)]
            if any(isinstance(r, str) for r in found):
                break
    reasons = [r for r in found if isinstance(r, str)]
    return reasons or None


def usage_of(answer: ModelAnswer) -> dict[str, int] | None:
    """Token counts of a plain answer's `usage`, or of the streamed chunk that carried it."""
    usage = answer.body.get("usage") if isinstance(answer.body, dict) else None
    for data in reversed(answer.events or ()):
        if usage is not None:
            break
        if '"usage"' in data:
            try:
                usage = (json.loads(data) or {}).get("usage")
            except (ValueError, AttributeError):
                usage = None
    if not isinstance(usage, dict):
        return None
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens")) or prompt + completion
    return {"prompt": prompt, "completion": completion, "total": total}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _error_of(answer: ModelAnswer | None) -> str | None:
    if answer is None or answer.status < 400:
        return None
    if isinstance(answer.body, dict) and isinstance(answer.body.get("error"), dict):
        return str(answer.body["error"].get("message") or f"HTTP {answer.status}")
    return f"HTTP {answer.status}"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
