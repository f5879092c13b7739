"""Answers the HTTP layers send themselves: a JSON-RPC error, a JSON body, an OpenAI-shaped error; and a
receive that hands over a body read already."""

from __future__ import annotations

import json
from typing import Any

import anyio

# A refused body's rest is read and dropped, up to these bounds, before the connection closes (`drain`).
DRAIN_BYTES = 64 * 1024 * 1024
DRAIN_SECONDS = 10.0


def replay_body(body: bytes, receive: Any) -> Any:
    """An ASGI receive that hands over `body` (read already) in one message, then the client's own
    receive, which reports its disconnect."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def send_error(
    send: Any,
    status: int,
    code: int,
    message: str,
    *,
    request_id: Any = None,
    close: bool = False,
    extra: list[tuple[bytes, bytes]] | None = None,
    drain: Any = None,
) -> None:
    """A JSON-RPC error as a whole HTTP response."""
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()
    await send_body(send, status, body, close=close, extra=extra, drain=drain)


async def send_body(
    send: Any,
    status: int,
    body: bytes,
    *,
    close: bool = False,
    extra: list[tuple[bytes, bytes]] | None = None,
    drain: Any = None,
) -> None:
    """A JSON body as a whole HTTP response; `drain`: the receive of a refused body to read the rest of first."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    if close:  # the rest of an unread body would be taken for the next request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await _send_whole(send, body, drain)


async def send_openai_error(
    send: Any,
    status: int,
    message: str,
    *,
    close: bool = False,
    extra: list[tuple[bytes, bytes]] | None = None,
    drain: Any = None,
) -> None:
    """An error as OpenAI-compatible clients parse it (`llm.answer.error_body`'s shape)."""
    error = {"message": message, "type": "invalid_request_error", "code": f"http_{status}", "param": None}
    body = json.dumps({"error": error}).encode()
    await send_body(send, status, body, close=close, extra=extra, drain=drain)


async def _send_whole(send: Any, body: bytes, drain: Any) -> None:
    """The answer's body; with `drain`, the refused request body's rest is read and dropped before the connection
    closes: a socket closed with unread bytes in it is reset, and a reset client loses the answer it was sent
    (a 413 then arrives as "connection reset"). Content-Length tells the client the answer is whole meanwhile."""
    if drain is None:
        await send({"type": "http.response.body", "body": body, "more_body": False})
        return
    await send({"type": "http.response.body", "body": body, "more_body": True})
    dropped = 0
    with anyio.move_on_after(DRAIN_SECONDS):
        while dropped <= DRAIN_BYTES:
            message = await drain()
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
            dropped += len(message.get("body", b""))
    await send({"type": "http.response.body", "body": b"", "more_body": False})
