"""A request cut off by the gateway's shutdown is answered as its protocol expects.

At SIGTERM uvicorn gives requests in flight SHUTDOWN_GRACE seconds, then cancels
them; a cancelled request without an answer got uvicorn's 500 text/plain, and a
started event stream was cut without a word. Here the cancellation is caught at the
top of the request and answered: a JSON-RPC error (GATEWAY_STOPPING, with the
request's id) for an MCP message, as a whole response or as the stream's last
event; an OpenAI-shaped error for a model request. The client learns the call did
not complete because the gateway stopped, and may retry elsewhere.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio

from mcpgw.gateway.errors.tree import GATEWAY_STOPPING

MESSAGE = "the gateway is stopping (shutdown): this request was cut off; retry once it is back"


async def answer_if_stopped(
    app: Any, scope: Any, receive: Any, send: Any, request: Any, *, model: bool = False
) -> None:
    """Run `app`; if shutdown cancels it, answer `request` (the parsed JSON-RPC message, or a model body)."""
    started: dict[str, Any] = {}

    async def watch(message: Any) -> None:
        if message["type"] == "http.response.start":
            started["content-type"] = next(
                (v for k, v in message.get("headers", []) if k.lower() == b"content-type"), b""
            )
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            started["done"] = True
        await send(message)

    try:
        await app(scope, receive, watch)
    except anyio.get_cancelled_exc_class():
        if started.get("done"):
            raise
        # The top of the request's task: answering, then ending normally, is what lets the client know.
        with anyio.CancelScope(shield=True), anyio.move_on_after(1):
            await _answer(send, started, request, model)


def stopped_body(request: Any, model: bool = False) -> bytes:
    """The answer to a request cut off by shutdown (`request`: the parsed JSON-RPC message, or a model body)."""
    if model:
        payload: dict[str, Any] = {
            "error": {"message": MESSAGE, "type": "server_error", "code": "gateway_stopping", "param": None}
        }
    else:
        request_id = request.get("id") if isinstance(request, dict) else None
        payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": GATEWAY_STOPPING, "message": MESSAGE}}
    return json.dumps(payload).encode()


def stopped_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    """The head of that answer, sent whole (503, the connection closed)."""
    return [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        (b"retry-after", b"5"),
    ]


async def _answer(send: Any, started: dict[str, Any], request: Any, model: bool) -> None:
    body = stopped_body(request, model)
    if "content-type" not in started:
        await send({"type": "http.response.start", "status": 503, "headers": stopped_headers(body)})
        await send({"type": "http.response.body", "body": body, "more_body": False})
    elif started["content-type"].startswith(b"text/event-stream"):
        await send(
            {"type": "http.response.body", "body": b"event: message\ndata: " + body + b"\n\n", "more_body": False}
        )
    else:  # a plain answer half sent cannot take another: end it, the client sees a cut response
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def exit_now() -> None:
    """A second interrupt: kill the servers and exit at once, without the orderly shutdown."""
    from mcpgw.gateway.upstreams.stdio_transport import kill_all_now

    print("mcpgw: second interrupt: killing the servers and exiting now", file=sys.stderr)
    kill_all_now()
    os._exit(130)
