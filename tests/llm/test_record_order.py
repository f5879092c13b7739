"""A model exchange's call-log record is written before its answer goes out.

It was written after (a background task once the body was sent). A client acts on an answer at once: the
tool call the model asked for reached the gateway, was answered in the turn that read it (gateway.runtime.eager) and
logged before the model's record, so a replay's call log could differ from the recording's in its order (a
run's model turn after the tool call it caused). tests/runs/test_end_to_end.py caught it, once in a while."""

from __future__ import annotations

import json

import anyio
import pytest
from starlette.applications import Starlette

from mcpgw.gateway.endpoints.http_guard import GuardPolicy, HttpGuard, default_allowed_hosts
from mcpgw.llm.passthrough import CHAT, ModelPassthrough
from tests.cassette.test_one_player import CHAT_BODY, model_entries


class ListLog:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def append(self, record: dict) -> None:
        self.records.append(record)


@pytest.mark.parametrize("stream", [False, True])
def test_the_record_of_a_replayed_model_answer_is_written_before_the_answer_starts(stream):
    body = {**CHAT_BODY, "stream": True} if stream else CHAT_BODY
    entries = model_entries(body, [("r", "it is noon")])
    if stream:
        for entry in entries:
            entry["result"] = {
                "status": 200,
                "events": ['{"choices":[{"delta":{"content":"it is noon"}}]}'],
                "content_type": "text/event-stream",
            }
    log = ListLog()
    passthrough = ModelPassthrough("replay", None, recorded_entries=entries, call_log=log)
    app = HttpGuard(
        Starlette(routes=passthrough.routes()), GuardPolicy(allowed_hosts=default_allowed_hosts("127.0.0.1"))
    )
    logged_when: dict[str, int] = {}
    sent: list[bytes] = []

    async def exchange() -> None:
        request = json.dumps(body).encode()
        received = [{"type": "http.request", "body": request, "more_body": False}]

        async def receive() -> dict:
            return received.pop(0) if received else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                logged_when["head"] = len(log.records)
            elif message["type"] == "http.response.body":
                sent.append(message.get("body", b""))
                if not message.get("more_body"):
                    logged_when["end"] = len(log.records)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": CHAT,
            "raw_path": CHAT.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"), (b"x-run-id", b"r")],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 2),
        }
        await app(scope, receive, send)

    anyio.run(exchange)
    assert b"it is noon" in b"".join(sent)
    assert logged_when == {"head": 1, "end": 1}, logged_when
    assert log.records[0]["outcome"] == "hit"
