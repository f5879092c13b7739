"""A scripted OpenAI-compatible model on 127.0.0.1, served by uvicorn in a thread.

The script maps (strategy, marker) to the replies of one conversation, in order:
a request belongs to the first marker found in its messages, and its strategy is
read from its shape (tools -> tc, a stop list -> react, neither -> mcpbench).
Steps: {"text": ...}, {"tool_calls": [[name, arguments dict or raw text]], "text"?},
{"status": 500}, {"hold": seconds} (answer nothing that long, or until stopped, or until the caller leaves:
`abandoned` counts those), {"stream_hold": seconds} (streamed: one chunk, then the same wait; a caller that leaves
mid-stream is counted too). A request with "stream": true gets its reply as SSE chunks
(content in pieces, each tool call's arguments in two pieces, usage last when asked).
"""

from __future__ import annotations

import json
import socket
import threading
from collections import Counter
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def strategy_of(body: dict[str, Any]) -> str:
    return "tc" if body.get("tools") else "react" if body.get("stop") else "mcpbench"


class ScriptedModel:
    def __init__(self, script: dict[tuple[str, str], list[dict[str, Any]]], model: str = "scripted-1") -> None:
        self.script = script
        self.model = model
        self.turns: Counter[tuple[str, str]] = Counter()
        self.seen: list[dict[str, Any]] = []  # {"authorization", "body"} per request
        self.abandoned = 0  # requests held ("hold") whose caller closed the connection before the answer
        # Bound and listening before the server thread starts: connections wait in the backlog.
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._released = threading.Event()  # ends every "hold" step: set when stopping

    # -- the model -----------------------------------------------------------------------

    def step_for(self, body: dict[str, Any]) -> tuple[tuple[str, str] | None, dict[str, Any] | None]:
        text = json.dumps(body.get("messages"), ensure_ascii=False)
        strategy = strategy_of(body)
        for (kind, marker), steps in self.script.items():
            if kind == strategy and marker in text:
                index = self.turns[(kind, marker)]
                self.turns[(kind, marker)] += 1
                return (kind, marker), steps[index] if index < len(steps) else {"text": "(script exhausted)"}
        return None, None

    async def chat(self, request: Request) -> Any:
        body = await request.json()
        self.seen.append(
            {
                "authorization": request.headers.get("authorization"),
                "body": body,
                "traceparent": request.headers.get("traceparent"),
            }
        )
        key, step = self.step_for(body)
        if step is None:
            return JSONResponse(
                {"error": {"message": "no script for this conversation", "type": "invalid_request_error"}},
                status_code=400,
            )
        if "hold" in step:  # a model too slow for the caller's deadline
            with anyio.move_on_after(step["hold"]):
                while not self._released.is_set():
                    if await request.is_disconnected():  # its caller gave up on it: counted, and nothing sent
                        self.abandoned += 1
                        return Response(status_code=499)
                    await anyio.sleep(0.05)
        if "status" in step:
            return JSONResponse(
                {"error": {"message": "scripted failure", "type": "server_error"}}, status_code=step["status"]
            )
        calls = [
            {
                "id": f"call_{key[1][:4]}_{self.turns[key]}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(step.get("tool_calls") or [])
        ]
        content = step.get("text")
        usage = {
            "prompt_tokens": len(json.dumps(body["messages"])) // 4,
            "completion_tokens": 1 + len(content or "") // 4 + 8 * len(calls),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if calls else "stop"
        ident = f"chatcmpl-{self.turns[key]}"
        if body.get("stream") and "stream_hold" in step:
            return StreamingResponse(self._held_stream(ident, step["stream_hold"]), media_type="text/event-stream")
        if body.get("stream"):
            return StreamingResponse(
                self._chunks(ident, content, calls, finish, usage, body), media_type="text/event-stream"
            )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        return JSONResponse(
            {
                "id": ident,
                "object": "chat.completion",
                "created": 1700000000,
                "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )

    async def _chunks(
        self,
        ident: str,
        content: str | None,
        calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, int],
        body: dict[str, Any],
    ) -> Any:
        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> bytes:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                **extra,
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        yield chunk({"role": "assistant", "content": ""})
        text = content or ""
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            if piece:
                yield chunk({"content": piece})
        for i, call in enumerate(calls):
            args = call["function"]["arguments"]
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": args[: len(args) // 2]},
                        }
                    ]
                }
            )
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": args[len(args) // 2 :]}}]})
        yield chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": self.model,
                "choices": [],
                "usage": usage,
            }
            yield f"data: {json.dumps(data)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def _held_stream(self, ident: str, seconds: float) -> Any:
        """One chunk, then nothing for `seconds` (or until stopped): a stream its caller may leave in the middle."""
        data = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": self.model,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "thinking"}, "finish_reason": None}],
        }
        finished = False
        try:
            yield f"data: {json.dumps(data)}\n\n".encode()
            with anyio.move_on_after(seconds):
                while not self._released.is_set():
                    await anyio.sleep(0.05)
            finished = True
            yield b"data: [DONE]\n\n"
        finally:
            if not finished:  # the caller closed the connection mid-stream (the server stopped this generator)
                self.abandoned += 1

    async def models(self, _: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "tests"}]})

    # -- serving -------------------------------------------------------------------------

    def start(self) -> ScriptedModel:
        app = Starlette(
            routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]), Route("/v1/models", self.models)]
        )
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
