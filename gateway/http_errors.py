"""Answers the HTTP layers send themselves: a JSON-RPC error, a JSON body, an OpenAI-shaped error; and a
receive that hands over a body read already."""

from __future__ import annotations

import json
from typing import Any


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


async def send_error(send: Any, status: int, code: int, message: str, *, request_id: Any = None,
                     close: bool = False, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON-RPC error as a whole HTTP response."""
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()
    await send_body(send, status, body, close=close, extra=extra)


async def send_body(send: Any, status: int, body: bytes, *, close: bool = False,
                    extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON body as a whole HTTP response."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    if close:  # the rest of an unread body would be taken for the next request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_openai_error(send: Any, status: int, message: str, *, close: bool = False,
                            extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """An error as OpenAI-compatible clients parse it (`llm.answer.error_body`'s shape)."""
    error = {"message": message, "type": "invalid_request_error", "code": f"http_{status}", "param": None}
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or ())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
