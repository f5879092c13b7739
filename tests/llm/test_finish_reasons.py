"""Why the model stopped, in a model exchange's call-log record (and so on its span): from a plain answer's
choices, or from a streamed answer's last chunks (every chunk names `finish_reason`, null until the end)."""

from __future__ import annotations

import json

from mcpgw.llm.answer import ModelAnswer
from mcpgw.llm.call_record import finish_reasons, model_record


def test_plain_and_streamed_answers_and_none():
    plain = ModelAnswer(200, body={"choices": [{"index": 0, "finish_reason": "tool_calls"}]})
    chunks = [json.dumps({"choices": [{"delta": {"content": c}, "finish_reason": None}]}) for c in "abc"]
    chunks += [
        json.dumps({"choices": [{"delta": {}, "finish_reason": "length"}]}),
        json.dumps({"choices": [], "usage": {}}),
    ]
    assert finish_reasons(plain) == ["tool_calls"]
    assert finish_reasons(ModelAnswer(200, events=chunks)) == ["length"]
    assert finish_reasons(ModelAnswer(200, events=chunks[:3])) is None
    assert finish_reasons(ModelAnswer(500, body={"error": {"message": "x"}})) is None


def test_the_record_carries_them_only_when_there_are_some():
    common = dict(
        server="@model",
        path="/v1/chat/completions",
        body={"model": "m"},
        run_id="r",
        lane="r",
        session_id="s",
        client_name=None,
        started_at=0.0,
        started=0.0,
        outcome="live",
    )
    said = model_record(**common, answer=ModelAnswer(200, body={"choices": [{"finish_reason": "stop"}]}))
    assert said["finish_reasons"] == ["stop"] and "client_traceparent" not in said
    assert "finish_reasons" not in model_record(**common, status=502, error="down")
