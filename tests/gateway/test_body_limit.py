"""Issue 41 item 9: a body over the 4 MiB limit is answered 413, never a reset connection.

A client that writes its whole (too large) request before it reads (a raw socket here; curl and most HTTP
libraries do the same for a body already in memory) used to be reset: the gateway closed the connection with
the body's rest unread, and the kernel's reset threw the 413 away. Every route family, declared length and
chunked alike.
"""

from __future__ import annotations

import socket

import pytest

from tests.conftest import misbehaving_entry

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("good")
BODY = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "good__echo", "arguments": {"a": "'
    + b"x" * (5 * 1024 * 1024)
    + b'"}}}'
)
ROUTES = ["/mcp", "/servers/good/mcp", "/v1/call-tool", "/v1/chat/completions"]


def _raw_post(base: str, path: str, chunked: bool) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(BODY)}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{framing}\r\n\r\n"
    ).encode()
    payload = BODY
    if chunked:
        pieces = [BODY[i : i + 65536] for i in range(0, len(BODY), 65536)]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + payload)  # all of it, then read: the order that got a reset
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_body_is_answered_413_on_every_route(gateway_factory, chunked):
    gateway = gateway_factory(CONFIG)
    for path in ROUTES:
        answer = _raw_post(gateway.base, path, chunked)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413 "), (path, answer[:300])
        assert b"connection: close" in head.lower() and b"4194304-byte limit" in body, (path, answer[:300])
