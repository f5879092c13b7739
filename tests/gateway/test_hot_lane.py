"""The hot lane answers byte for byte as the pipeline does, and leaves it everything it should not take.

The same raw HTTP exchanges go to two real gateways in front of server-everything (npx), one with the
hot lane on and one with it off (`MCPGW_HOT_LANE=off`), live and in replay of a cassette recorded from
it; their answers must be the same bytes (the date header and the session id aside) and their call logs
the same records. Around that: pipelined requests, a body slower than the lane waits for, a client
that asks to close, a cancellation, a shutdown mid-call, and uvicorn's private surface the lane reads.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import time
from urllib.parse import urlsplit

import pytest

from mcpgw.gateway.http import hot_protocol
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import start_gateway, stop_gateway

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
CONFIG = f"""version: 1
servers:
  every:
    command: npx
    args: ["-y", "{EVERYTHING}", "stdio"]
"""
PROTOCOL = "2025-11-25"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def request(
    host: str,
    message: object,
    session: str | None = None,
    *,
    raw: bytes | None = None,
    content_type: str = "application/json",
    extra: str = "",
    path: str = "/mcp",
) -> bytes:
    body = raw if raw is not None else json.dumps(message).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: {content_type}\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n{extra}"
    )
    if session:
        head += f"mcp-session-id: {session}\r\nmcp-protocol-version: {PROTOCOL}\r\n"
    return head.encode() + b"\r\n" + body


class Raw:
    """One keep-alive connection, read response by response."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.netloc
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(1 << 16)
        self.buffer += chunk
        return bool(chunk)

    def response(self) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            assert self._fill(), f"connection closed before an answer: {self.buffer!r}"
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = re.search(rb"\r\ncontent-length: (\d+)", head)
        if length is not None:
            size = int(length.group(1))
            while len(rest) < size:
                assert self._fill()
                rest = self.buffer.partition(b"\r\n\r\n")[2]
            self.buffer = rest[size:]
            return head + b"\r\n\r\n" + rest[:size]
        while b"\r\n0\r\n\r\n" not in rest and not rest.startswith(b"0\r\n\r\n"):  # chunked (an SSE answer)
            assert self._fill()
            rest = self.buffer.partition(b"\r\n\r\n")[2]
        end = rest.index(b"0\r\n\r\n") + 5
        self.buffer = rest[end:]
        return head + b"\r\n\r\n" + rest[:end]

    def closed(self) -> bool:
        self.sock.settimeout(5)
        return not self._fill()

    def close(self) -> None:
        self.sock.close()


def open_session(url: str) -> tuple[Raw, str]:
    conn = Raw(url)
    conn.send(request(conn.host, INIT))
    answer = conn.response()
    session = re.search(rb"mcp-session-id: (\S+)", answer).group(1).decode()
    conn.send(request(conn.host, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session))
    assert conn.response().startswith(b"HTTP/1.1 202")
    return conn, session


def call(i, name, arguments, **extra):
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **extra},
    }


def exchanges(url: str) -> list[bytes]:
    """Every answer of one scripted client, in order, with what differs between two gateways blanked."""
    conn, session = open_session(url)
    h = conn.host
    answers = []
    script = [
        request(h, call(1, "every__echo", {"message": "héllo"}), session),
        request(h, call("two", "every__echo", {"message": "two"}), session),
        request(h, call(3, "every__get-sum", {"a": 2, "b": 40}), session),
        request(h, call(4, "every__no-such-tool", {}), session),
        request(h, call(5, "every__get-sum", {"a": "x"}), session),  # invalid arguments (enforced)
        request(h, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}, session),
        request(h, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, session),
        request(h, None, session, raw=b'{"jsonrpc": "2.0", "id": 8, "method": '),  # not JSON: the guard's 400
        request(h, call(9, "every__echo", {"message": "x"}), session, content_type="text/plain"),  # 415
        request(h, call(10, "every__echo", {"message": "progress"}, _meta={"progressToken": "p"}), session),  # SSE
        request(h, [call(11, "every__echo", {"message": "batch"})], session),  # a batch
        request(h, call(12, "every__echo", {"message": "extra key"}) | {"extra": 1}, session),
        request(h, call(13, "every__echo", {"message": "x"}), "not-a-session"),  # 404
        request(h, call(18, "echo", {"message": "per server"}), session, path="/servers/every/mcp"),
        request(h, call(19, "echo", {"message": "x"}), session, path="/servers/nobody/mcp"),  # 404, naming the nearest
        request(h, call(20, "echo", {"message": "query"}), session, path="/servers/every/mcp?run=r1"),
        request("evil.example", call(21, "every__echo", {"message": "x"}), session),  # 421: the guard's Host check
    ]
    for data in script:
        conn.send(data)
        answers.append(conn.response())
    # Two requests in one write (HTTP pipelining): two answers, in order.
    conn.send(
        request(h, call(14, "every__echo", {"message": "first"}), session)
        + request(h, call(15, "every__echo", {"message": "second"}), session)
    )
    answers += [conn.response(), conn.response()]
    # A body that arrives after the lane stopped waiting for it: uvicorn's way, the same answer.
    data = request(h, call(16, "every__echo", {"message": "slow body"}), session)
    cut = data.index(b"\r\n\r\n") + 10
    conn.send(data[:cut])
    time.sleep(hot_protocol.HOT_BODY_WAIT + 0.5)
    conn.send(data[cut:])
    answers.append(conn.response())
    # A client that asks to close after its answer.
    conn.send(request(h, call(17, "every__echo", {"message": "bye"}), session, extra="connection: close\r\n"))
    answers.append(conn.response())
    assert conn.closed()
    conn.close()
    return [_blank(a, session) for a in answers]


def _blank(answer: bytes, session: str) -> bytes:
    answer = re.sub(rb"\r\ndate: [^\r]*", b"\r\ndate: -", answer).replace(session.encode(), b"SESSION")
    return re.sub(rb'"ttlMs":\d+', b'"ttlMs":-', answer)


def log_records(cassette) -> list[dict]:
    records = list(iter_calls(cassette))
    keep = (
        "tool",
        "exposed_name",
        "arguments",
        "known_tool",
        "validation",
        "outcome",
        "is_error",
        "error",
        "result_digest",
        "cassette_key",
        "source",
        "endpoint",
        "protocol_version",
        "client_name",
        "run_id",
    )
    # The caller's fields (the hot lane decides them once per repeated head): the session's own id blanked, and a
    # sessionless client's identity (minted at random by each gateway: gateway.sessions.client_identity).
    return [
        {k: r.get(k) for k in keep} | {"lane": re.sub(r"(session|client)-[^/]+", r"\1-S", r["lane"] or "")}
        for r in records
    ]


def served(gateway) -> int:
    return gateway.status().get("hot_lane", {}).get("served", 0)


def at_once(gateway) -> int:
    return gateway.status().get("hot_lane", {}).get("at_once", 0)


@pytest.mark.real  # starts a registry package (npx)
def test_hot_lane_answers_as_the_pipeline_does_live_and_in_replay(tmp_path, monkeypatch):
    recording = start_gateway(tmp_path / "rec", CONFIG, "--mode", "record", "--validate", "enforce")
    try:
        recorded = exchanges(recording.url)
    finally:
        stop_gateway(recording)
    cassette = tmp_path / "rec" / "cassettes"
    results = {}
    for lane in ("on", "off"):
        monkeypatch.setenv("MCPGW_HOT_LANE", lane)
        live = start_gateway(tmp_path / f"live-{lane}", CONFIG, "--mode", "live", "--validate", "enforce")
        replay = start_gateway(
            tmp_path / f"replay-{lane}",
            CONFIG,
            "--mode",
            "replay",
            "--validate",
            "enforce",
            "--cassettes-dir",
            str(cassette),
            "--log-cassette",
            f"log-{lane}",
        )
        try:
            results[lane] = {
                "live": exchanges(live.url),
                "replay": exchanges(replay.url),
                "served": (served(live), served(replay)),
                "live_log": log_records(live.cassettes / "test"),
                "at_once": (at_once(live), at_once(replay)),
            }
        finally:
            stop_gateway(live)
            stop_gateway(replay)
        results[lane]["replay_log"] = log_records(cassette / f"log-{lane}")
    on, off = results["on"], results["off"]
    assert on["served"][0] >= 10 and on["served"][1] >= 10, on["served"]  # the lane answered the hot calls
    assert off["served"] == (0, 0)
    # A replay (no live fallback) answers its calls in the turn that read them; live ones wait on a server: tasks.
    assert on["at_once"][0] == 0 and on["at_once"][1] >= 10 and on["at_once"][1] <= on["served"][1], on
    for mode in ("live", "replay"):
        assert len(on[mode]) == len(off[mode]) == 21
        for number, (hot, plain) in enumerate(zip(on[mode], off[mode])):
            assert hot == plain, f"{mode} answer {number} differs:\n{hot!r}\n{plain!r}"
    assert on["replay"][:7] == recorded[:7]  # replay answers the recorded calls as they were answered
    assert on["live_log"] == off["live_log"] and len(on["live_log"]) >= 10
    assert on["replay_log"] == off["replay_log"] and all(
        r["source"] in ("recorded", "missed", None) for r in on["replay_log"]
    )
    assert b"connection: close" in on["live"][-1] and b'"text":"Echo: first"' in on["live"][17]
    assert on["live"][16].startswith(b"HTTP/1.1 421")
    assert b'"text":"Echo: per server"' in on["live"][13] and on["live"][14].startswith(b"HTTP/1.1 404")
    # The run a request names is its own, also when the head before it (kept by the lane) named none.
    runs = [
        (r["endpoint"], r["run_id"], r["lane"])
        for r in on["replay_log"]
        if r["arguments"] in ({"message": "per server"}, {"message": "query"})
    ]
    assert runs == [("/servers/every/mcp", "default", "default/session-S"), ("/servers/every/mcp", "r1", "r1")], runs


def test_uvicorn_still_has_what_the_lane_reads():
    import asyncio

    from uvicorn.config import Config
    from uvicorn.server import ServerState

    async def connected() -> object:
        async def app(scope, receive, send):
            pass

        config = Config(app=app, http=hot_protocol.HotLaneProtocol)
        config.load()
        protocol = hot_protocol.HotLaneProtocol(config=config, server_state=ServerState(), app_state={})
        reader, writer = socket.socketpair()
        transport, _ = await asyncio.get_running_loop().connect_accepted_socket(lambda: protocol, reader)
        protocol.data_received(b"POST /mcp HTTP/1.1\r\nhost: x\r\n")  # a head begun: its url and headers exist
        writer.close()
        return protocol

    protocol = asyncio.run(connected())
    assert hot_protocol.missing(protocol) == []
    del protocol.pipeline
    assert hot_protocol.missing(protocol) == ["pipeline"]


@pytest.mark.real  # starts a registry package (npx)
def test_a_hot_call_is_cancelled_and_cut_off_by_shutdown_as_the_pipelines_would_be(tmp_path):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live")
    try:
        conn, session = open_session(gateway.url)
        long_call = call(1, "every__trigger-long-running-operation", {"duration": 30, "steps": 1})
        conn.send(request(conn.host, long_call, session))
        time.sleep(1.0)
        other = Raw(gateway.url)  # the cancellation comes on another connection, as an SDK client sends it
        other.send(
            request(
                other.host,
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}},
                session,
            )
        )
        assert other.response().startswith(b"HTTP/1.1 202")
        started = time.monotonic()
        answer = conn.response()
        assert time.monotonic() - started < 5
        assert answer.startswith(b"HTTP/1.1 200") and b'"message":"Request cancelled"' in answer, answer
        assert gateway.status()["hot_lane"]["served"] == 1  # the lane had taken it

        conn.send(request(conn.host, {**long_call, "id": 2}, session))
        time.sleep(1.0)
        gateway.process.send_signal(signal.SIGTERM)
        answer = conn.response()  # after the shutdown grace, cut off and answered
        assert answer.startswith(b"HTTP/1.1 503") and b"connection: close" in answer, answer
        body = json.loads(answer.partition(b"\r\n\r\n")[2])
        assert body["id"] == 2 and "gateway is stopping" in body["error"]["message"]
        assert gateway.process.wait(timeout=20) is not None
    finally:
        stop_gateway(gateway)


@pytest.mark.real  # starts a registry package (npx)
def test_the_lane_asks_for_the_token_as_the_guard_does(tmp_path, monkeypatch):
    token = "hot-lane-test-token-0123456789"
    monkeypatch.setenv("MCPGW_TEST_TOKEN", token)
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live", "--auth-token-env", "MCPGW_TEST_TOKEN", token=token)
    try:
        conn = Raw(gateway.url)
        auth = f"authorization: Bearer {token}\r\n"
        conn.send(request(conn.host, INIT, extra=auth))
        session = re.search(rb"mcp-session-id: (\S+)", conn.response()).group(1).decode()
        conn.send(request(conn.host, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session, extra=auth))
        assert conn.response().startswith(b"HTTP/1.1 202")
        conn.send(request(conn.host, call(1, "every__echo", {"message": "no token"}), session))
        assert conn.response().startswith(b"HTTP/1.1 401")
        conn.send(
            request(
                conn.host, call(2, "every__echo", {"message": "wrong"}), session, extra="authorization: Bearer nope\r\n"
            )
        )
        assert conn.response().startswith(b"HTTP/1.1 401")
        conn.send(request(conn.host, call(3, "every__echo", {"message": "with token"}), session, extra=auth))
        answer = conn.response()
        assert answer.startswith(b"HTTP/1.1 200") and b"Echo: with token" in answer
        lane = gateway.status()["hot_lane"]
        assert lane["served"] == 1 and lane["declined"] >= 2
    finally:
        stop_gateway(gateway)


@pytest.mark.real  # starts a registry package (npx)
def test_a_connection_idle_after_a_hot_answer_is_closed_as_uvicorn_closes_it(tmp_path):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live")
    try:
        conn, session = open_session(gateway.url)
        for number in range(3):  # busy every 3 s for 9 s: kept open (uvicorn's keep-alive is 5 s)
            conn.send(request(conn.host, call(number + 1, "every__echo", {"message": f"m{number}"}), session))
            assert conn.response().startswith(b"HTTP/1.1 200")
            time.sleep(3)
        assert gateway.status()["hot_lane"]["served"] == 3
        conn.send(request(conn.host, call(9, "every__echo", {"message": "last"}), session))
        assert conn.response().startswith(b"HTTP/1.1 200")
        idle_since = time.monotonic()
        conn.sock.settimeout(15)
        assert conn.sock.recv(1) == b""  # closed by the gateway ...
        assert 4.5 < time.monotonic() - idle_since < 11  # ... once idle for its keep-alive time
    finally:
        stop_gateway(gateway)


def test_the_lanes_header_view_reads_as_starlettes():
    from starlette.requests import Request

    from mcpgw.gateway.endpoints.hot_lane import _HeaderView

    raw = [
        (b"host", b"x"),
        (b"accept", b"application/json"),
        (b"accept", b"text/html"),
        (b"content-type", b"application/json; charset=utf-8"),
    ]
    ours, theirs = _HeaderView(raw).headers, Request({"type": "http", "headers": raw}).headers
    for name in ("accept", "Accept", "content-type", "host", "x-none"):
        assert ours.get(name, "") == theirs.get(name, ""), name
    for name in ("accept", "x-none", "Accept", "x-none"):  # read again (kept once read), with another default too
        assert ours.get(name, "d") == theirs.get(name, "d") and ours.get(name) == theirs.get(name, ""), name
