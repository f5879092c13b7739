"""A real OpenAI-compatible chat-completions server on loopback, with scripted answers.

Runs starlette under uvicorn in a thread, on a port the OS picks, and is
stopped by the fixture. A script is a list of steps consumed one per request
(the last one repeats):
    {"content": "text"}        200 with a normal chat completion
    {"status": 500, ...}       an HTTP error with an OpenAI-style error body
    {"raw": "text"}            200 with a body that is not a completion
    {"no_choices": True}       200 with an empty choices list
    {"delay": 2.0, ...}        wait before answering (for timeouts)
or a function request_json -> step. Every request body is kept in `.requests`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[dict[str, Any]] | Callable[[dict[str, Any]], dict[str, Any]] = [{"content": "{}"}]
        self.url = ""

    def next_step(self, body: dict[str, Any]) -> dict[str, Any]:
        if callable(self.script):
            return self.script(body)
        index = min(len(self.requests) - 1, len(self.script) - 1)
        return self.script[index]

    async def completions(self, request: Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        step = self.next_step(body)
        if step.get("delay"):
            await asyncio.sleep(step["delay"])
        if "status" in step:
            return JSONResponse(
                {"error": {"message": step.get("message", "scripted failure"), "type": "server_error"}},
                status_code=step["status"],
            )
        if "raw" in step:
            return PlainTextResponse(step["raw"])
        choices = (
            []
            if step.get("no_choices")
            else [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": step.get("content", "")},
                }
            ]
        )
        return JSONResponse(
            {
                "id": f"cmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "?"),
                "choices": choices,
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )

    def prompts(self) -> list[str]:
        """The user message of every request, in order."""
        return [next(m["content"] for m in r["messages"] if m["role"] == "user") for r in self.requests]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    app = Starlette(routes=[Route("/v1/chat/completions", fake.completions, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake OpenAI server did not start within 10 s")
        time.sleep(0.01)
    fake.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield fake
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        assert not thread.is_alive(), "the fake OpenAI server did not stop within 10 s"


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def judge_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EVAL_TEST_JUDGE_KEY", "sk-test")
    return "EVAL_TEST_JUDGE_KEY"


def call(run_id: str = "r1", **fields: Any) -> dict[str, Any]:
    """A complete call-log record with sensible defaults."""
    record = {
        "run_id": run_id,
        "session_id": "s1",
        "seq": 0,
        "started_at": "2025-01-01T00:00:00+00:00",
        "ended_at": "2025-01-01T00:00:01+00:00",
        "latency_ms": 10.0,
        "client_name": "agent",
        "protocol_version": "2025-06-18",
        "server": "weather",
        "tool": "forecast",
        "exposed_name": "weather__forecast",
        "arguments": {"city": "Oslo"},
        "known_tool": True,
        "validation": {"valid": True, "errors": []},
        "outcome": "ok",
        "is_error": False,
        "result_digest": "abc",
        "cassette_key": None,
        "source": "live",
        "input_schema_digest": None,
    }
    record.update(fields)
    return record
