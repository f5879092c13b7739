"""A repeated request head is read without the parser only when the parser would read it alike.

Unit tests of gateway.http.repeat_head on heads it must and must not take; then a byte-level differential
fuzzer: seeded mutations of a kept-alive client's requests (split across reads at any byte, pipelined,
a header changed or added, the length's digits padded or wrong, a chunked body, a byte flipped) sent
to two real gateways in front of server-everything (npx), the hot lane on and off; what each sends
back on the connection, byte for byte (dates and session ids aside), must be the same.
"""

from __future__ import annotations

import random
import re
import time

import pytest

from mcpgw.gateway.http.repeat_head import RepeatHead
from tests.conftest import start_gateway, stop_gateway
from tests.gateway.test_hot_lane import CONFIG, call, open_session, request

HEAD = (
    b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 12\r\n"
    b"mcp-session-id: abc\r\n\r\n"
)
HEADERS = [
    (b"host", b"x"),
    (b"content-type", b"application/json"),
    (b"content-length", b"12"),
    (b"mcp-session-id", b"abc"),
]


def template() -> RepeatHead:
    repeat = RepeatHead.of(HEAD, 12, b"/mcp", HEADERS, True)
    assert repeat is not None
    return repeat


def with_length(body: bytes, digits: bytes | None = None) -> bytes:
    return HEAD.replace(b"length: 12", b"length: " + (digits or str(len(body)).encode())) + body


def test_a_repeated_head_is_matched_with_its_own_length_and_body():
    repeat = template()
    data = with_length(b'{"a": "longer body"}')
    headers, body_at, end = repeat.match(data)
    assert data[body_at:end] == b'{"a": "longer body"}' and end == len(data)
    assert headers[2] == (b"content-length", b"20") and headers[:2] == HEADERS[:2] and HEADERS[2][1] == b"12"
    head_only = data[:body_at]  # the body not arrived yet: where it will end
    assert repeat.match(head_only)[1:] == (body_at, end)


@pytest.mark.parametrize(
    "data",
    [
        with_length(b"{}", b"02"),  # a leading zero
        with_length(b"{}", b"+2"),
        with_length(b"{}", b" 2"),
        with_length(b"{}", "\u0662".encode()),  # a digit, but not ASCII
        with_length(b"{}", b"1" * 13),
        with_length(b"{}").replace(b"host: x", b"host: y"),
        with_length(b"{}").replace(b"\r\n\r\n", b"\r\nx: 1\r\n\r\n"),
        with_length(b"{}").replace(b"content-type", b"Content-Type"),
        with_length(b"{}")[:30],  # half a head
        b"GET" + with_length(b"{}")[4:],
    ],
)
def test_anything_but_the_same_head_is_left_to_the_parser(data):
    assert template().match(data) is None


@pytest.mark.parametrize(
    "head, headers, length",
    [
        (HEAD, HEADERS, 13),  # the digits are not the body's length
        (HEAD.replace(b"\r\n\r\n", b"\r\ncontent-length: 12\r\n\r\n"), HEADERS + [(b"content-length", b"12")], 12),
        (
            HEAD.replace(b"\r\n\r\n", b"\r\ntransfer-encoding: chunked\r\n\r\n"),
            HEADERS + [(b"transfer-encoding", b"chunked")],
            12,
        ),
        (HEAD.replace(b"length: 12", b"length: 12 "), HEADERS, 12),  # what the parser read is not these bytes
        (HEAD[:-2], HEADERS, 12),  # not a whole head
    ],
)
def test_a_head_that_could_be_misread_is_not_kept(head, headers, length):
    assert RepeatHead.of(head, length, b"/mcp", headers, True) is None


# The fuzzer: what each gateway sends back on one connection for the same bytes.


def transcript(url: str, writes_for) -> bytes:
    """Everything the gateway sends back on one session's connection for the writes `writes_for(host, session)`
    gives (each with a pause after it), until it has been quiet for 1.5 s or closed the connection."""
    conn, session = open_session(url)
    sock = conn.sock
    for piece, pause in writes_for(conn.host, session):
        try:
            sock.sendall(piece)
        except OSError:
            break  # closed by the gateway: what it sent is compared
        time.sleep(pause)
    received = b""
    sock.settimeout(1.5)
    while True:
        try:
            chunk = sock.recv(1 << 16)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            received += b"<closed>"
            break
        received += chunk
    conn.close()
    return re.sub(rb"\r\ndate: [^\r]*", b"\r\ndate: -", received).replace(session.encode(), b"SESSION")


def mutated(rng: random.Random, host: str, session: str, number: int) -> list[tuple[bytes, float]]:
    """One case: a few requests repeating one head, one of them changed; returned as writes and pauses."""
    requests = [
        request(host, call(number * 10 + i, "every__echo", {"message": f"m{i}-" + "x" * rng.randrange(40)}), session)
        for i in range(4)
    ]
    target = rng.randrange(1, 4)  # the first one makes the head kept; a later one is changed
    data = requests[target]
    head_end = data.index(b"\r\n\r\n")
    kind = rng.choice(
        [
            "split",
            "split",
            "pipeline",
            "length-zero-padded",
            "length-short",
            "header-added",
            "header-case",
            "byte-flip",
            "chunked",
            "length-spaces",
            "body-trailing",
        ]
    )
    if kind == "pipeline":
        requests[target : target + 2] = [data + requests[target + 1] if target + 1 < len(requests) else data + data]
    elif kind == "length-zero-padded":
        requests[target] = data.replace(b"content-length: ", b"content-length: 0", 1)
    elif kind == "length-short":
        requests[target] = re.sub(
            rb"content-length: (\d+)", lambda m: b"content-length: %d" % (int(m.group(1)) - 3), data, count=1
        )
    elif kind == "header-added":
        requests[target] = data[:head_end] + b"\r\nx-extra: 1" + data[head_end:]
    elif kind == "header-case":
        requests[target] = data.replace(b"content-type", b"Content-Type", 1)
    elif kind == "byte-flip":
        at = rng.randrange(len(data))
        requests[target] = data[:at] + bytes([data[at] ^ (1 << rng.randrange(7))]) + data[at + 1 :]
    elif kind == "chunked":
        body = data[head_end + 4 :]
        head = re.sub(rb"content-length: \d+", b"transfer-encoding: chunked", data[:head_end])
        requests[target] = head + b"\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    elif kind == "length-spaces":
        requests[target] = data.replace(b"content-length: ", b"content-length:   ", 1)
    elif kind == "body-trailing":
        requests[target] = (
            re.sub(rb"content-length: (\d+)", lambda m: b"content-length: %d" % (int(m.group(1)) + 2), data, count=1)
            + b"\r\n"
        )
    writes: list[tuple[bytes, float]] = []
    for data in requests:
        if kind == "split" or rng.random() < 0.3:  # cut in pieces at any byte: reads that end mid-head, mid-body
            cuts = sorted(rng.sample(range(1, len(data)), rng.randrange(1, 3)))
            pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
            writes += [(piece, 0.05) for piece in pieces]
        else:
            writes.append((data, 0.0))
        writes.append((b"", 0.15))  # let the answer come before the next request
    return writes


@pytest.mark.real  # starts a registry package (npx)
def test_a_byte_level_fuzzer_finds_no_difference_between_the_lane_and_the_parser(tmp_path, monkeypatch):
    gateways = {}
    for lane in ("on", "off"):
        monkeypatch.setenv("MCPGW_HOT_LANE", lane)
        gateways[lane] = start_gateway(tmp_path / lane, CONFIG, "--mode", "live", "--validate", "enforce")
    try:
        for number in range(24):
            seen = {
                lane: transcript(
                    gateway.url, lambda host, session: mutated(random.Random(number), host, session, number)
                )
                for lane, gateway in gateways.items()
            }
            assert seen["on"] == seen["off"], f"case {number}:\n{seen['on']!r}\n{seen['off']!r}"
        lane = gateways["on"].status()["hot_lane"]
        assert lane["repeated_heads"] >= 10, lane  # the repeated path was taken, and compared
        assert gateways["off"].status().get("hot_lane") is None
    finally:
        for gateway in gateways.values():
            stop_gateway(gateway)


@pytest.mark.real  # starts a registry package (npx)
def test_a_client_sending_head_and_body_apart_gets_its_head_kept(tmp_path):
    """httpx (so the SDK's client) writes a request's head and its body apart: the head of the first request the
    lane took is kept from a read that held only the head, and every later request is read as its repeat."""
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live")
    try:

        def apart(host: str, session: str) -> list[tuple[bytes, float]]:
            writes = []
            for i in range(5):
                data = request(host, call(i + 1, "every__echo", {"message": f"apart {i}"}), session)
                head_end = data.index(b"\r\n\r\n") + 4
                writes += [(data[:head_end], 0.05), (data[head_end:], 0.15)]
            return writes

        before = gateway.status()["hot_lane"]["repeated_heads"]
        seen = transcript(gateway.url, apart)
        assert all(f"Echo: apart {i}".encode() in seen for i in range(5)), seen
        assert gateway.status()["hot_lane"]["repeated_heads"] - before == 4  # all but the first
    finally:
        stop_gateway(gateway)


@pytest.mark.real  # starts a registry package (npx)
def test_a_held_body_later_than_the_wait_goes_the_parsers_way_though_a_quick_one_armed_the_deadline(tmp_path):
    """A connection's held bodies share one deadline check (gateway.http.hot_protocol `_unread_check`): armed by a body that
    came in time, it fires before a later head's wait is up, and must wait on for that one rather than let it be."""
    from mcpgw.gateway.http import hot_protocol

    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live")
    wait = hot_protocol.HOT_BODY_WAIT
    try:

        def late(host: str, session: str) -> list[tuple[bytes, float]]:
            first, quick, slow = (
                request(host, call(i, "every__echo", {"message": f"late {i}"}), session) for i in (1, 2, 3)
            )
            cut = quick.index(b"\r\n\r\n") + 4
            slow_cut = slow.index(b"\r\n\r\n") + 4
            return [
                (first, 0.2),  # its head is kept
                (quick[:cut], 0.05),
                (quick[cut:], 0.3 * wait),  # held, then in time: arms the check, left armed
                (slow[:slow_cut], 1.6 * wait),  # held while the check fires (too early for it) and fires again
                (slow[slow_cut:], 0.3),
            ]

        before = gateway.status()["hot_lane"]["repeated_heads"]
        seen = transcript(gateway.url, late)
        assert all(f"Echo: late {i}".encode() in seen for i in (1, 2, 3)), seen
        # The quick one read as a repeat; the late one, its wait up, went to the parser (then the lane the usual way).
        assert gateway.status()["hot_lane"]["repeated_heads"] - before == 1
    finally:
        stop_gateway(gateway)


@pytest.mark.real  # starts a registry package (npx)
def test_after_repeated_heads_a_header_flood_on_the_same_connection_still_gets_431(tmp_path):
    """The hot lane reads first (gateway.endpoints.http_app.GatewayHttpProtocol): the reads it takes whole skip the head checks.
    What comes next on the same connection must still meet them: a flood of header lines, and an endless header
    line (refused within a read of the byte cap, as on a fresh connection: gateway.http.http_head_limits)."""
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live")
    try:
        lines = b"".join(b"x-filler-%d: y\r\n" % i for i in range(500))
        endless = [b"x-big: "] + [b"a" * 1024] * 1000  # up to 1 MB, in 1 KB pieces
        for pieces in ([lines + b"\r\n"], endless):
            conn, session = open_session(gateway.url)
            for i in (1, 2, 3):  # the second and third read as the first's repeats
                conn.send(request(conn.host, call(i, "every__echo", {"message": f"m{i}"}), session))
                assert b"Echo: m%d" % i in conn.response()
            try:
                conn.send(b"POST /mcp HTTP/1.1\r\nhost: " + conn.host.encode() + b"\r\n")
                for piece in pieces:
                    conn.send(piece)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused and closed while it was still being sent
            received = conn.buffer
            try:
                while chunk := conn.sock.recv(1 << 16):
                    received += chunk
            except ConnectionResetError:
                pass
            assert received.startswith(b"HTTP/1.1 431"), received[:200]
            conn.close()
        assert gateway.status()["hot_lane"]["repeated_heads"] >= 4
    finally:
        stop_gateway(gateway)
