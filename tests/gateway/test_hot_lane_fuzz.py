"""A differential fuzzer for the hot lane: generated raw HTTP requests, near the edges of what it takes,
answered alike with the lane on and off.

tests/gateway/test_hot_lane.py holds a scripted client to "byte for byte as the pipeline"; this one
generates the requests instead (a seeded generator, not hypothesis: two gateway processes hold state
across requests, so each case is one request on a live keep-alive connection). It varies what the
lane's checks read - the path and query, Host, Accept, Content-Type, the session and protocol-version
headers (missing, wrong, repeated, the other era), Expect, Connection, header case - and the body: the
JSON-RPC envelope (ids and methods of every JSON type, other versions, extra keys), the params (names, arguments
of the wrong type, `_meta` with and without a progress token), and its text (whitespace, a repeated
key, a BOM, a cut, lone surrogates, a batch). Each case goes to three gateways: the lane on, the lane
off, and the SDK's own path (the fast path off). Live, one process: the answers with the lane on and off
must be the same bytes (date, session id, port blanked) and the SDK's the same status, headers and
body; replayed by `--workers 2` (the cases recorded first): the same answers whichever worker a
connection reached. Then every call-log record must be the same from all three.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
from urllib.parse import urlsplit

import pytest

from tests.conftest import start_gateway, stop_gateway
from tests.gateway.test_hot_lane import (
    CONFIG,
    INIT,
    PROTOCOL,
    log_records,
    request,
    served,
)

CASES = 1200
SEED = int(os.environ.get("MCPGW_FUZZ_SEED", "20261126"))  # another seed: another walk, the same checks


class Conn:
    """One keep-alive connection; answers read one by one (interim 100 Continue heads included)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.netloc, parts.port
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=20)
        self.buffer = b""

    def _fill(self) -> bool:
        try:
            chunk = self.sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        self.buffer += chunk
        return bool(chunk)

    def answer(self) -> bytes:
        """The next answer; b"" when the connection closed without one."""
        while b"\r\n\r\n" not in self.buffer:
            if not self._fill():
                rest, self.buffer = self.buffer, b""
                return b"<closed>" + rest
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        if head.startswith(b"HTTP/1.1 100"):
            self.buffer = rest
            return head + b"\r\n\r\n" + self.answer()
        length = re.search(rb"\r\ncontent-length: (\d+)", head)
        if length is not None:
            size = int(length.group(1))
            while len(self.buffer.partition(b"\r\n\r\n")[2]) < size and self._fill():
                pass
            rest = self.buffer.partition(b"\r\n\r\n")[2]
            self.buffer = rest[size:]
            return head + b"\r\n\r\n" + rest[:size]
        if b"transfer-encoding: chunked" not in head:
            while self._fill():  # read to the close
                pass
            self.buffer, rest = b"", self.buffer.partition(b"\r\n\r\n")[2]
            return head + b"\r\n\r\n" + rest
        while b"0\r\n\r\n" not in self.buffer.partition(b"\r\n\r\n")[2] and self._fill():
            pass
        rest = self.buffer.partition(b"\r\n\r\n")[2]
        end = rest.index(b"0\r\n\r\n") + 5 if b"0\r\n\r\n" in rest else len(rest)
        self.buffer = rest[end:]
        return head + b"\r\n\r\n" + rest[:end]

    def close(self) -> None:
        self.sock.close()


def _plain(conn: Conn, message: dict, session: str | None = None) -> bytes:
    conn.sock.sendall(request(conn.host, message, session))
    return conn.answer()


def open_session(url: str) -> tuple[Conn, str]:
    conn = Conn(url)
    session = re.search(rb"mcp-session-id: (\S+)", _plain(conn, INIT)).group(1).decode()
    assert _plain(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).startswith(b"HTTP/1.1 202")
    return conn, session


# -- the generator: one case = (path, header lines with placeholders, body bytes) ------------------------


class Rng(random.Random):
    """A seeded generator with a rate of oddity, drawn per case: most cases stay near the lane's edge
    (a plain hot request with one or two things changed), some stray far from it."""

    odd = 0.2

    def pick(self, common, *others):
        """`common`, or (at the case's rate of oddity) one of the others."""
        return self.choice(others) if others and self.random() < self.odd else common


def _text(rng: Rng) -> str:
    return "".join(
        rng.choice(["a", "é", " ", '"', "\\", "\n", "\u2028", "\ud83d\ude00", "\x00", "\ud800", "}"])
        for _ in range(rng.randrange(0, 12))
    )


def _message(rng: Rng, number: int) -> object:
    method = rng.pick(
        "tools/call",
        "tools/list",
        "ping",
        "resources/list",
        "tools/cal",
        "notifications/cancelled",
        7,
        None,
        ["tools/call"],
        {"name": "tools/call"},
    )  # methods not strings: some not even hashable
    message: dict = {"jsonrpc": rng.pick("2.0", "1.0", 2.0, None)}
    ident = rng.pick(number, f"s{number}", 0, -number, 2**70, 1.5, float(number), True, None, [number], "")
    if rng.random() >= rng.odd / 2:
        message["id"] = ident
    message["method"] = method
    if method == "tools/call":
        name = rng.pick(rng.choice(["every__echo", "every__get-sum", "echo"]), "every__nope", "", 5, None)
        arguments = rng.pick(
            rng.choice([{"message": _text(rng)}, {"a": rng.randrange(-9, 9), "b": 2}]),
            {},
            [],
            "x",
            None,
            {"message": 5},
            {"a": "1", "b": 2},
        )
        params: dict = {"name": name}
        if arguments is not None or rng.random() < 0.5:
            params["arguments"] = arguments
        if rng.random() < rng.odd:
            params["_meta"] = rng.choice(
                [
                    {},
                    {"progressToken": number},
                    {"x": 1},
                    None,
                    {"io.modelcontextprotocol/related-task": {"taskId": "t"}},
                ]
            )
        if rng.random() < rng.odd / 3:
            params["extra"] = 1
        message["params"] = params
    elif rng.random() < 0.3:  # tools/list, ping & co: their params
        message["params"] = rng.choice([{}, None, [], {"cursor": "c"}, {"_meta": {}}])
    if rng.random() < rng.odd / 3:
        message["extra"] = True
    if rng.random() < rng.odd / 4:
        del message["jsonrpc"]
    return [message] if rng.random() < rng.odd / 4 else message


def _body(rng: Rng, number: int) -> bytes:
    message = _message(rng, number)
    text = json.dumps(
        message,
        ensure_ascii=rng.random() < 0.5,
        indent=rng.pick(None, 1, 0),
        separators=rng.pick((",", ":"), (", ", ": ")),
    )
    roll = rng.random() if rng.random() < rng.odd * 3 else 1.0
    if roll < 0.03 and text.endswith("}"):
        text = text[:-1] + ', "id": "again"}'  # a repeated key: the last one wins, everywhere
    elif roll < 0.05:
        text = text[: rng.randrange(0, len(text))]  # cut short
    elif roll < 0.06:
        text = "\ufeff" + text
    elif roll < 0.08:
        text = " \n" + text + "\n "
    return text.encode("utf-8", "surrogatepass")


def case(rng: Rng, number: int) -> tuple[str, list[str], bytes]:
    rng.odd = rng.choice([0.0, 0.03, 0.1, 0.3])
    path = rng.pick(
        "/mcp",
        "/mcp?run=r1",
        "/mcp?",
        "/mcp/",
        "/servers/every/mcp",
        "/servers/every/mcp?run=x",
        "/servers/nope/mcp",
        "/servers/ev%65ry/mcp",
        "/MCP",
        "/servers//mcp",
        "/servers/every/mcp/",
    )
    lines = [
        rng.pick("host: {host}", "host: localhost:{port}", "host: evil.example", "host: 127.0.0.1"),
        rng.pick(
            "content-type: application/json",
            "content-type: application/json; charset=utf-8",
            "Content-Type: Application/JSON",
            "content-type: text/plain",
            "content-type: application/json-seq",
        ),
        rng.pick(
            "accept: application/json, text/event-stream",
            "accept: application/json",
            "accept: text/event-stream",
            "accept: */*",
            "accept: application/*, text/*",
            "accept: text/html",
        ),
        rng.pick(
            "mcp-session-id: {session}",
            "mcp-session-id: nope",
            "mcp-session-id: {session}\r\nmcp-session-id: {session}",
            "Mcp-Session-Id:   {session}  ",
        ),
        rng.pick(
            f"mcp-protocol-version: {PROTOCOL}",
            "mcp-protocol-version: 2025-03-26",
            "mcp-protocol-version: 2025-06-18",
            "mcp-protocol-version: 2026-07-28",
            "mcp-protocol-version: x",
        ),
    ]
    lines = [line for line in lines if rng.random() >= rng.odd / 4]  # now and then one is missing
    for extra in (
        "x-mcpgw-run: r2",
        "cookie: a=1",
        "cookie: b=2",
        "user-agent: fuzz/1",
        "x-title: t",
        "expect: 100-continue",
        "authorization: Bearer x",
        "connection: keep-alive",
        "connection: close",
    ):
        if rng.random() < rng.odd / 5:
            lines.append(extra)
    rng.shuffle(lines)
    return path, lines, _body(rng, number)


def raw(conn: Conn, session: str, path: str, lines: list[str], body: bytes) -> bytes:
    head = "".join(line.format(host=conn.host, port=conn.port, session=session) + "\r\n" for line in lines)
    return f"POST {path} HTTP/1.1\r\n{head}content-length: {len(body)}\r\n\r\n".encode("latin-1") + body


def blank(answer: bytes, session: str, port: int) -> bytes:
    answer = re.sub(rb"\r\ndate: [^\r]*", b"\r\ndate: -", answer).replace(session.encode(), b"SESSION")
    answer = re.sub(rb"\r\nmcp-session-id: [0-9a-f]{32}", b"\r\nmcp-session-id: NEW", answer)  # one minted per refusal
    answer = re.sub(rb"mcpgw-client=[0-9a-f]+", b"mcpgw-client=NEW", answer)
    answer = answer.replace(str(port).encode(), b"PORT")
    return re.sub(rb'"ttlMs":\d+', b'"ttlMs":-', answer)


def unordered(answer: bytes) -> tuple:
    """An answer with its header lines as a set: the SDK's responses order them otherwise than the fast path."""
    interim = b""
    while answer.startswith(b"HTTP/1.1 100"):
        head, _, answer = answer.partition(b"\r\n\r\n")
        interim += head
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    return interim, status, sorted(lines), body


def dechunk(data: bytes) -> bytes:
    """A chunked body's bytes."""
    out = b""
    while data:
        size, _, data = data.partition(b"\r\n")
        if int(size, 16) == 0:
            break
        out, data = out + data[: int(size, 16)], data[int(size, 16) + 2 :]
    return out


def routed(answer: bytes) -> bytes:
    """An answer with what --workers varies from connection to connection taken out: which worker answered,
    and whether it forwarded (a forwarded answer streams back chunked)."""
    answer = re.sub(rb"\r\nx-mcpgw-(worker|forwarded-by): \d+", b"", answer)
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"\r\ntransfer-encoding: chunked" in head and b"text/event-stream" not in head:
        body = dechunk(body)
        head = head.replace(b"\r\ntransfer-encoding: chunked", b"") + b"\r\ncontent-length: " + str(len(body)).encode()
    return head + b"\r\n\r\n" + body


def play(gateways: dict, *, workers: bool = False) -> None:
    """Every generated case to every gateway, in one session each; the answers compared."""
    sessions = {lane: open_session(gateway.url) for lane, gateway in gateways.items()}
    rng = Rng(SEED)
    differing = []
    for number in range(1, CASES + 1):
        path, lines, body = case(rng, number)
        answers = {}
        for lane, (conn, session) in sessions.items():
            conn.sock.sendall(raw(conn, session, path, lines, body))
            answer = conn.answer()
            answers[lane] = blank(answer, session, conn.port)
            if answer.startswith(b"<closed>") or b"\r\nconnection: close" in answer.partition(b"\r\n\r\n")[0]:
                conn.close()  # the next case comes on a new connection, in the same session
                sessions[lane] = (Conn(gateways[lane].url), session)
        if len(answers) == 1:
            continue  # recording
        if workers:
            alike = len({repr(unordered(routed(answer))) for answer in answers.values()}) == 1
        else:
            alike = answers["on"] == answers["off"] and unordered(answers["off"]) == unordered(answers["sdk"])
        if not alike:
            differing.append((number, path, lines, body, answers))
    assert not differing, "\n\n".join(
        f"case {n}: POST {p} {ls} {b!r}\n" + "\n".join(f"  {k}: {v!r}" for k, v in a.items())
        for n, p, ls, b, a in differing[:5]
    )


def start_three(tmp_path, monkeypatch, *args: str) -> dict:
    """Gateways with the lane on, off, and the SDK's own path (the fast path off)."""
    gateways = {}
    for lane, fast in (("on", "on"), ("off", "on"), ("sdk", "off")):
        monkeypatch.setenv("MCPGW_HOT_LANE", "on" if lane == "on" else "off")
        monkeypatch.setenv("MCPGW_FAST_PATH", fast)
        gateways[lane] = start_gateway(
            tmp_path / lane, CONFIG, "--validate", "enforce", *[a.replace("{lane}", lane) for a in args]
        )
    return gateways


def served_by_lane(gateways: dict) -> int:
    """What the lane served (with --workers, the most any worker says: each /status read is a new
    connection, dealt to the workers in turn, and the session's owner served them all)."""
    lane_on, lane_off, sdk = (max(served(gateways[lane]) for _ in range(4)) for lane in ("on", "off", "sdk"))
    assert lane_off == 0 and sdk == 0
    return lane_on


@pytest.mark.real  # starts a registry package (npx)
def test_generated_requests_are_answered_alike_with_the_lane_on_and_off(tmp_path, monkeypatch):
    gateways = start_three(tmp_path, monkeypatch, "--mode", "live")
    try:
        play(gateways)
        assert served_by_lane(gateways) >= CASES // 10  # the lane took a fair share
    finally:
        for gateway in gateways.values():
            stop_gateway(gateway)
    on, off = log_records(gateways["on"].cassettes / "test"), log_records(gateways["off"].cassettes / "test")
    assert on == off and len(on) >= CASES // 10


@pytest.mark.real  # starts a registry package (npx)
def test_generated_requests_replayed_by_two_workers_are_answered_alike(tmp_path, monkeypatch):
    """The same cases recorded, then replayed by `--workers 2` gateways: a case's connection reaches either
    worker (the session's owner answers, forwarded to if need be), the answers stay the same. It found a
    forwarded `Expect: 100-continue` request answered with the owner's interim "100 Continue"."""
    recorder = start_gateway(tmp_path / "rec", CONFIG, "--mode", "record", "--validate", "enforce")
    try:
        play({"rec": recorder})
    finally:
        stop_gateway(recorder)
    cassettes = str(tmp_path / "rec" / "cassettes")
    gateways = start_three(
        tmp_path,
        monkeypatch,
        "--mode",
        "replay",
        "--workers",
        "2",
        "--cassettes-dir",
        cassettes,
        "--log-cassette",
        "log-{lane}",
    )
    try:
        play(gateways, workers=True)
        assert served_by_lane(gateways) >= CASES // 10
    finally:
        for gateway in gateways.values():
            stop_gateway(gateway)
    logs = [log_records(tmp_path / "rec" / "cassettes" / f"log-{lane}") for lane in gateways]
    assert logs[0] == logs[1] == logs[2] and len(logs[0]) >= CASES // 10
    assert all(record["source"] in ("recorded", "missed", None) for record in logs[0])
