"""One send per answer: the head and body of a response leave the gateway together.

Unit tests of the transport wrapper (a recording transport double), then the real gateway in
front of mcp-server-time (uvx), read with a raw socket: each answer arrives in one piece.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from urllib.parse import urlsplit

import pytest

from mcpgw.gateway.http.write_coalescing import CoalescingTransport
from tests.conftest import start_gateway, stop_gateway


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.events: list[str] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        self.events.append("write")

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def get_write_buffer_size(self) -> int:
        return 0


def test_writes_of_one_step_leave_as_one_at_its_end():
    async def scenario() -> tuple[list[bytes], list[bytes], int]:
        inner = RecordingTransport()
        transport = CoalescingTransport(inner, asyncio.get_running_loop())
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(bytearray(b"{}"))
        transport.write(b"")
        before = list(inner.writes)
        pending = transport.get_write_buffer_size()
        await asyncio.sleep(0)
        first_step = list(inner.writes)
        transport.write(b"later")
        await asyncio.sleep(0)
        return before, first_step + inner.writes[len(first_step) :], pending

    before, after, pending = asyncio.run(scenario())
    assert before == [] and pending == len(b"HTTP/1.1 200 OK\r\n\r\n{}")
    assert after == [b"HTTP/1.1 200 OK\r\n\r\n{}", b"later"]


def test_close_sends_what_is_pending_first_and_abort_drops_it():
    async def scenario() -> tuple[RecordingTransport, RecordingTransport]:
        loop = asyncio.get_running_loop()
        closed, aborted = RecordingTransport(), RecordingTransport()
        one, two = CoalescingTransport(closed, loop), CoalescingTransport(aborted, loop)
        one.write(b"bye")
        one.close()
        two.write(b"lost")
        two.abort()
        await asyncio.sleep(0)  # the flushes scheduled by the writes find nothing left
        return closed, aborted

    closed, aborted = asyncio.run(scenario())
    assert closed.events == ["write", "close"] and closed.writes == [b"bye"]
    assert aborted.events == ["abort"] and aborted.writes == []


def test_everything_else_is_the_socket_transports():
    """A real socket transport behind the wrapper: what the wrapper does not own is answered by it."""

    async def scenario() -> tuple:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
        wrapped = CoalescingTransport(transport, loop)
        seen = (
            wrapped.get_extra_info("peername"),
            wrapped.get_extra_info("socket") is transport.get_extra_info("socket"),
            wrapped.is_reading(),
        )
        wrapped.pause_reading()  # not a method of the wrapper's own: reaches the socket transport
        paused = transport.is_reading()
        wrapped.close()
        server.close()
        await server.wait_closed()
        return port, seen, paused, transport.is_closing()

    port, (peer, same_socket, reading), paused, closed = asyncio.run(scenario())
    assert peer == ("127.0.0.1", port) and same_socket and reading
    assert paused is False and closed


TIME_SERVER = """version: 1
servers:
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
"""


def post(host: str, path: str, message: dict, session: str | None = None) -> bytes:
    body = json.dumps(message).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n"
    )
    if session:
        head += f"mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"
    return head.encode() + b"\r\n" + body


def first_read(sock: socket.socket) -> bytes:
    """What one read returns as soon as the answer starts arriving: a head sent apart from its
    body is seen alone (the gateway did that before, on every answer of this test)."""
    ready, _, _ = select.select([sock], [], [], 30)
    assert ready, "no answer within 30 s"
    return sock.recv(1 << 20)


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_each_json_answer_of_the_real_gateway_arrives_in_one_piece(tmp_path):
    gateway = start_gateway(tmp_path, TIME_SERVER)
    try:
        url = urlsplit(gateway.url)
        with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
            sock.sendall(
                post(
                    url.netloc,
                    url.path,
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "clientInfo": {"name": "raw", "version": "0"},
                        },
                    },
                )
            )
            answer = first_read(sock)
            deadline = time.monotonic() + 30
            while not answer.endswith(b"0\r\n\r\n") and time.monotonic() < deadline:  # an SSE answer: read to its end
                answer += first_read(sock)
            session = next(
                line.split(b":", 1)[1].strip().decode()
                for line in answer.split(b"\r\n")
                if line.lower().startswith(b"mcp-session-id:")
            )
            sock.sendall(post(url.netloc, url.path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session))
            assert first_read(sock).startswith(b"HTTP/1.1 202")
            for number in range(1, 21):
                call = {
                    "jsonrpc": "2.0",
                    "id": number,
                    "method": "tools/call",
                    "params": {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
                }
                sock.sendall(
                    post(
                        url.netloc,
                        url.path,
                        call if number % 2 else {**call, "method": "tools/list", "params": {}},
                        session,
                    )
                )
                answer = first_read(sock)
                head, _, body = answer.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                assert len(body) == length, f"answer {number} arrived in pieces: {answer[:200]!r}"
                assert json.loads(body)["id"] == number
    finally:
        stop_gateway(gateway)
