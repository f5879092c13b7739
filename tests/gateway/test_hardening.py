"""Issue 25: a real `mcpgw serve` in front of a real server (npx server-everything), probed over raw HTTP.

Lone surrogates, NaN and Infinity are refused at the edge with -32700 on /mcp (fast path on) and in
OpenAI's shape on /v1; /v1 bodies have a size cap, a depth cap and a deadline; two Host headers and a
Host with userinfo are refused; header floods get a 431 and a closed connection.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from tests.gateway.test_conformance import EVERYTHING
from tests.gateway.test_http_edges import ACCEPT, INIT, answers, open_session, tool_call

CONFIG = f"""version: 1
servers:
  everything:
    command: npx
    args: ["-y", "{EVERYTHING}", "stdio"]
"""


@pytest.fixture
def gateway(gateway_factory):
    return gateway_factory(CONFIG, "--validate", "enforce", "--llm-max-body-bytes", "200000", "--llm-body-timeout", "1")


def raw_request(port: int, head: bytes, body: bytes = b"", timeout: float = 20) -> bytes:
    """One request on a fresh socket; everything the gateway sends until it closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + body)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
                if b"\r\n\r\n" in received and b"connection: close" not in received.lower():
                    break
        except (TimeoutError, ConnectionResetError):
            pass
    return received


def test_lone_surrogates_and_nan_get_parse_errors_on_mcp_and_the_session_goes_on(gateway):
    bodies = [
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"\\ud800"}}}',
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"everything__echo\\udfff","arguments":{"message":"x"}}}',
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":NaN,"b":1}}}',
        b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":-Infinity,"b":1}}}',
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":1e999,"b":1}}}',
    ]
    with httpx.Client(timeout=30) as client:
        headers = open_session(client, gateway.url)
        for body in bodies:
            response = client.post(gateway.url, content=body, headers=headers)
            assert response.status_code == 400, (body, response.text)
            assert response.headers["content-type"] == "application/json"
            assert response.json()["error"]["code"] == -32700, response.text
        paired = client.post(
            gateway.url,
            content=b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":'
            b'{"name":"everything__echo","arguments":{"message":"\\ud83d\\ude00"}}}',
            headers=headers,
        )
        (ok,) = answers(paired)
        assert ok["result"]["content"][0]["text"] == "Echo: \U0001f600"  # a surrogate pair is one character
    assert gateway.status()["http"]["refused"]["400"] >= len(bodies)


def test_two_host_headers_and_a_host_with_userinfo_are_refused(gateway):
    port = int(gateway.base.rsplit(":", 1)[1])
    two = raw_request(port, f"GET /status HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert two.startswith(b"HTTP/1.1 400"), two[:200]
    userinfo = raw_request(port, f"GET /status HTTP/1.1\r\nHost: localhost:{port}@evil.example\r\n\r\n".encode())
    assert userinfo.startswith(b"HTTP/1.1 421"), userinfo[:200]
    fine = raw_request(port, f"GET /status HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
    assert fine.startswith(b"HTTP/1.1 200"), fine[:200]


def test_a_header_the_gateway_acts_on_given_twice_is_refused(gateway):
    """Two session ids were answered on the first session (the SDK reads the first) and logged under the
    second's run (the gateway's context read the last); with the hot lane, answered on the second."""
    port = int(gateway.base.rsplit(":", 1)[1])
    with httpx.Client(timeout=30) as client:
        first, second = open_session(client, gateway.url), open_session(client, gateway.url)
    body = json.dumps(tool_call(5, "everything__echo", {"message": "which session?"})).encode()

    def head(*extra: str, path: str = "/mcp") -> bytes:
        lines = [
            f"POST {path} HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            f"Accept: {first['accept']}",
            "MCP-Protocol-Version: 2025-06-18",
            *extra,
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    session = f"Mcp-Session-Id: {first['mcp-session-id']}"
    cases = {
        "Mcp-Session-Id": head(session, f"mcp-session-id: {second['mcp-session-id']}"),
        "X-Run-Id": head(session, "X-Run-Id: run-a", "X-Run-Id: run-b"),
        "Origin": head(session, "Origin: http://evil.example", f"Origin: http://127.0.0.1:{port}"),
        "MCP-Protocol-Version": head(session, "MCP-Protocol-Version: 2025-03-26"),
        "Content-Type": head(session, "Content-Type: text/plain"),
    }
    cases["run parameters in the query"] = head(session, path="/mcp?run=a&run=b")
    for name, request in cases.items():
        answer = raw_request(port, request, body)
        assert answer.startswith(b"HTTP/1.1 400"), (name, answer[:300])
        said = f"2 {name}: send exactly one" if " " in name else f"2 {name} headers: send exactly one"
        assert f'"{said}"'.encode() in answer, (name, answer[-200:])
        assert b"mcp-session-id:" not in answer.partition(b"\r\n\r\n")[0].lower(), answer[:300]  # on no session
    # A run named two ways, differently: which one the client meant is not guessed (the query's was taken).
    answer = raw_request(port, head(session, "X-Run-Id: run-b", path="/mcp?run=run-a"), body)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert b'"two runs named: ?run=run-a and X-Run-Id: run-b: name one (or the same in both)"' in answer, answer[-200:]
    # The same request with each header once (the run named alike both ways) is answered, on the session it names.
    answer = raw_request(port, head(session, "X-Run-Id: run-a", path="/mcp?run=run-a"), body)
    assert answer.startswith(b"HTTP/1.1 200") and b"which session?" in answer, answer[:300]
    assert f"mcp-session-id: {first['mcp-session-id']}".encode() in answer.lower()


def test_a_call_before_initialize_is_refused_without_naming_a_session(gateway):
    """The SDK mints a session for any sessionless POST and names it in its 400 (then discards it): a client
    that keeps the name reaches no session. The refusal now names none, and no session stays open."""
    with httpx.Client(timeout=30) as client:
        opened = gateway.status()["http"]["sessions"]["open"]
        refused = client.post(gateway.url, json=tool_call(1, "everything__echo", {"message": "x"}), headers=ACCEPT)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["message"] == "Bad Request: Missing session ID"
        assert "mcp-session-id" not in refused.headers
        assert gateway.status()["http"]["sessions"]["open"] == opened
        for method in ("GET", "DELETE"):  # the same for the other methods a session is named on
            refused = client.request(method, gateway.url, headers={"accept": "text/event-stream, application/json"})
            assert refused.status_code == 400 and "mcp-session-id" not in refused.headers, (method, refused.headers)
        opening = client.post(gateway.url, json=INIT, headers=ACCEPT)  # the initialize that should have come first
        assert opening.status_code == 200 and opening.headers["mcp-session-id"]


def test_header_floods_get_431_and_a_closed_connection(gateway):
    port = int(gateway.base.rsplit(":", 1)[1])
    many = b"".join(b"X-Filler-%d: y\r\n" % i for i in range(500))
    answer = raw_request(port, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode() + many + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    # One endless header line: refused once the head passes its cap, whatever is still to come.
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Big: ".encode())
        received = b""
        try:
            for _ in range(1000):  # up to 1 MB, in 1 KB pieces
                sock.sendall(b"a" * 1024)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    assert received.startswith(b"HTTP/1.1 431"), received[:200]
    # A usual request, and one whose head and body arrive together, still pass.
    big_body = json.dumps(tool_call(1, "everything__echo", {"message": "z" * 300_000})).encode()
    with httpx.Client(timeout=30) as client:
        headers = open_session(client, gateway.url)
        (ok,) = answers(client.post(gateway.url, content=big_body, headers=headers))
        assert ok["result"]["content"][0]["text"] == "Echo: " + "z" * 300_000


def test_a_head_over_the_cap_is_refused_however_it_arrives(gateway):
    """The cap holds for the bytes of the head as parsed, not only as read: a head over it arriving in one read
    (a first request, or the second on a kept-alive connection, whose read began after the first's end) is
    refused too, as is a request target over it."""
    port = int(gateway.base.rsplit(":", 1)[1])
    usual = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    big_header = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Big: {'a' * 70_000}\r\n\r\n".encode()
    big_target = f"GET /healthz?{'q' * 70_000} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    for name, request in (("one header", big_header), ("the target", big_target)):
        assert raw_request(port, request).startswith(b"HTTP/1.1 431"), name
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(usual)
            first = b""
            while b"\r\n\r\n" not in first or not first.rstrip().endswith(b"}"):
                first += sock.recv(65536)
            assert first.startswith(b"HTTP/1.1 200"), first[:200]
            sock.sendall(request)  # on the same connection, its head in one write
            received = b""
            try:
                while chunk := sock.recv(65536):
                    received += chunk
            except ConnectionResetError:
                pass
        assert received.startswith(b"HTTP/1.1 431"), (name, received[:200])
    # A head just under the cap still passes.
    fits = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Big: {'a' * 60_000}\r\n\r\n".encode()
    assert raw_request(port, fits).startswith(b"HTTP/1.1 200")


def test_the_model_endpoint_has_limits_and_answers_in_openai_shape(gateway):
    url = gateway.base + "/v1/chat/completions"
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=30) as client:
        cases = [
            (b"x" * 300_000, 413),
            (b"[" * 1000 + b"]" * 1000, 400),
            (b'{"model":"m","messages":[{"role":"user","content":"\\ud800"}]}', 400),
            (b'{"model":"m","temperature":NaN,"messages":[]}', 400),
        ]
        for body, status in cases:
            response = client.post(url, content=body, headers={"content-type": "application/json"})
            assert response.status_code == status, (body[:40], response.text)
            error = response.json()["error"]
            assert error["type"] == "invalid_request_error" and error["message"], error
        # No model endpoint configured: the request itself passed the edge.
        assert client.post(url, json=chat).status_code == 503
    port = int(gateway.base.rsplit(":", 1)[1])
    stalled = raw_request(
        port,
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode(),
        b'{"model":',
    )
    assert stalled.startswith(b"HTTP/1.1 408"), stalled[:200]
    assert b'"invalid_request_error"' in stalled


def test_sigterm_answers_calls_in_flight_with_a_json_rpc_error(gateway_factory):
    """Item 8: a call still running when the grace period ends got uvicorn's 500 text/plain."""
    import signal

    from tests.conftest import misbehaving_entry, stop_gateway

    gateway = gateway_factory("version: 1\nservers:\n" + misbehaving_entry("good"), "--call-timeout", "60")
    port = int(gateway.base.rsplit(":", 1)[1])
    with httpx.Client(timeout=30) as client:
        headers = open_session(client, gateway.url)
    hung = []
    for rid, accept in ((5, "application/json, text/event-stream"), (6, "application/json, text/event-stream")):
        body = json.dumps(tool_call(rid, "good__hang", {})).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: {accept}\r\nMcp-Session-Id: {headers['mcp-session-id']}\r\n"
            f"Mcp-Protocol-Version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(head + body)
        hung.append(sock)
    import time

    time.sleep(0.5)  # not a synchronisation: lets the calls reach the upstream before the signal
    gateway.process.send_signal(signal.SIGTERM)
    for rid, sock in zip((5, 6), hung):
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        sock.close()
        assert b"text/plain" not in received and b"Internal Server Error" not in received, received[:300]
        payload = received.split(b"\r\n\r\n", 1)[1]
        found = [json.loads(line[5:]) for line in payload.splitlines() if line.startswith(b"data:")] or [
            json.loads(payload)
        ]
        assert any(m.get("id") == rid and m.get("error", {}).get("code") == -32010 for m in found), received[:400]
    gateway.process.wait(timeout=30)
    stop_gateway(gateway)


def test_each_front_is_refused_in_the_shape_its_clients_parse(gateway):
    """The guard's refusals (two runs named, a foreign Host) reached OpenAI clients on /v1/chat/completions,
    /v1/models and the Azure route as JSON-RPC errors, which they cannot read; mcprouter's routes got theirs."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=30) as client:
        for method, path in (
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/models"),
            ("POST", "/openai/deployments/d/chat/completions"),
        ):
            for headers in ({"X-Run-Id": "b"}, {"Host": "evil.example"}):
                refused = client.request(
                    method, gateway.base + path + "?run=a", headers=headers, json=body if method == "POST" else None
                )
                assert refused.status_code in (400, 421), (path, refused.text)
                error = refused.json()["error"]
                assert isinstance(error, dict) and error["message"] and error["type"] == "invalid_request_error", (
                    refused.text
                )
        rest = client.post(gateway.base + "/v1/list-servers?run=a", headers={"X-Run-Id": "b"}, json={})
        assert rest.status_code == 400 and rest.json()["code"] == -1, rest.text  # mcprouter's envelope
        mcp = client.post(gateway.url + "?run=a", headers={**ACCEPT, "X-Run-Id": "b"}, json=INIT)
        assert mcp.status_code == 400 and mcp.json()["error"]["code"] == -32600, mcp.text  # JSON-RPC on /mcp
