"""Issue 41 items 5, 6, 7: SSE streams are bounded, counted as sessions and owned, on a real gateway.

- a client that opens `/servers/<id>/sse` and never reads, then posts calls with 500 KB answers: the gateway holds
  at most --sse-max-unread-bytes of them, refuses the posts past it (429), and its memory stays flat;
- with --max-sessions-per-client 3, a client opening six streams has at most three open at once, and a stream idle
  past --session-idle-timeout is closed;
- a post into another client's stream (another run, another token) is refused.
"""

from __future__ import annotations

import json
import re
import socket
import time

import httpx

from tests.conftest import misbehaving_entry

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("fx")


def open_stream(base: str, path: str = "/servers/fx/sse", headers: str = "") -> tuple[socket.socket, str]:
    """A raw SSE stream: (its socket, the message URL its endpoint event names); nothing more is read from it."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client that reads nothing holds little
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{headers}\r\n".encode())
    seen = b""
    while (found := re.search(rb"data: (\S+session_id=[0-9a-f]+\S*)\r?\n", seen)) is None:
        chunk = sock.recv(4096)
        assert chunk, seen
        seen += chunk
    return sock, found.group(1).decode()


def rss(pid: int) -> int:
    """Resident bytes of a process (Linux)."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def post(base: str, endpoint: str, message: dict, **headers: str) -> httpx.Response:
    return httpx.post(
        base + endpoint, json=message, headers={"content-type": "application/json", **headers}, timeout=30
    )


def initialize(base: str, endpoint: str) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    assert post(base, endpoint, init).status_code == 202
    assert post(base, endpoint, {"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202


_SEEN: dict[int, bytes] = {}


def is_open(sock: socket.socket) -> bool:
    """Whether the gateway still holds the stream open: no end of its chunked answer, no EOF, yet."""
    sock.settimeout(0.2)
    if _SEEN.get(sock.fileno()) == b"ended":
        return False
    seen = _SEEN.get(sock.fileno(), b"")
    try:
        while True:
            chunk = sock.recv(65536)
            seen += chunk
            if not chunk or (b"\r\n" + seen).endswith(b"\r\n0\r\n\r\n"):
                _SEEN[sock.fileno()] = b"ended"
                return False
    except TimeoutError:
        _SEEN[sock.fileno()] = seen[-16:]
        return True
    except OSError:
        _SEEN[sock.fileno()] = b"ended"
        return False


def test_an_unread_stream_holds_a_bounded_number_of_answers(gateway_factory):
    gateway = gateway_factory(CONFIG, "--sse-max-unread-bytes", "4000000")
    sock, endpoint = open_stream(gateway.base)
    initialize(gateway.base, endpoint)
    before = rss(gateway.process.pid)
    statuses = []
    for n in range(200):
        call = {
            "jsonrpc": "2.0",
            "id": n + 1,
            "method": "tools/call",
            "params": {"name": "huge", "arguments": {"bytes": 500_000}},
        }
        statuses.append(post(gateway.base, endpoint, call).status_code)
        if n % 20 == 19:
            time.sleep(0.3)  # let answers arrive and pile up
    grown = rss(gateway.process.pid) - before
    refused = [s for s in statuses if s == 429]
    assert statuses[0] == 202 and len(refused) > 100, statuses
    assert grown < 80 * 1024 * 1024, grown  # 200 answers of 500 KB held would be 100 MB and more
    answer = post(gateway.base, endpoint, {"jsonrpc": "2.0", "id": 999, "method": "ping"})
    assert answer.status_code == 429 and "has not read" in answer.json()["error"]["message"]
    sock.close()


def test_sse_streams_count_as_sessions_and_idle_out(gateway_factory):
    gateway = gateway_factory(CONFIG, "--max-sessions-per-client", "3", "--session-idle-timeout", "2")
    streams = [open_stream(gateway.base) for _ in range(6)]
    time.sleep(0.5)
    assert sum(is_open(sock) for sock, _ in streams) == 3  # the three least recently opened were closed for room
    assert [is_open(sock) for sock, _ in streams[-3:]] == [True, True, True]
    time.sleep(4)  # idle past the timeout
    assert not any(is_open(sock) for sock, _ in streams)
    answer = post(gateway.base, streams[-1][1], {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.status_code == 404, answer.text  # the stream, and its session, are gone
    for sock, _ in streams:
        sock.close()


def test_a_post_into_another_clients_stream_is_refused(gateway_factory):
    gateway = gateway_factory(CONFIG)
    sock, endpoint = open_stream(gateway.base, "/servers/fx/sse?run=owner")
    assert "run=owner" in endpoint
    initialize(gateway.base, endpoint)
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}},
    }
    assert post(gateway.base, endpoint, call).status_code == 202  # the owner
    other_run = post(gateway.base, endpoint.replace("run=owner", "run=intruder"), call)
    assert other_run.status_code == 403 and "another client" in other_run.json()["error"]["message"]
    other_token = post(gateway.base, endpoint, call, authorization="Bearer someone-elses-token-123456")
    assert other_token.status_code == 403
    logged = [json.dumps(r) for r in _calls(gateway)]
    assert not any("intruder" in r for r in logged), logged
    sock.close()


def _calls(gateway) -> list[dict]:
    from mcpgw.recorder.calllog import iter_calls

    path = gateway.cassettes / "test"
    time.sleep(0.5)
    return list(iter_calls(path)) if path.exists() else []
