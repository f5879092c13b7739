"""README promises of the HTTP front that had no test: 64 levels of JSON nesting, the body deadline,
--allow-host, the bearer token's minimum length and --auth-token-file, --session-idle-timeout and
--run-idle-timeout. The guard's own limits in process (the deadline shortened through its policy);
the options through a real `mcpgw serve`."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import anyio
import httpx
import pytest

from mcpgw.gateway.endpoints.http_guard import MAX_DEPTH, GuardPolicy, HttpGuard, load_token
from mcpgw.gateway.errors.tree import GatewayError
from tests.conftest import ROOT, misbehaving_entry

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def reached(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"reached": true}'})


def post(policy: GuardPolicy, body: str) -> tuple[int, str]:
    """One POST /mcp through the guard in front of an app that says it was reached."""

    async def go() -> tuple[int, str]:
        transport = httpx.ASGITransport(app=HttpGuard(reached, policy))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.post("/mcp", content=body, headers=HEADERS)
            return response.status_code, response.text

    return anyio.run(go)


def nested(depth: int) -> str:
    """A ping whose params hold `depth` levels of nesting in all (the message itself is the first)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"deep": ' + inner + "}}"


def test_json_nested_64_levels_passes_and_65_is_refused():
    assert MAX_DEPTH == 64
    policy = GuardPolicy(allowed_hosts={"127.0.0.1"})
    assert post(policy, nested(64)) == (200, '{"reached": true}')
    status, text = post(policy, nested(65))
    assert status == 400 and "nested deeper than 64 levels" in text


def test_a_body_that_stops_arriving_is_refused_at_the_deadline():
    app = HttpGuard(reached, GuardPolicy(allowed_hosts={"127.0.0.1"}, body_timeout=0.3))
    sent: list[dict] = []
    parts = [{"type": "http.request", "body": b'{"jsonrpc": "2.0", ', "more_body": True}]

    async def receive():
        if parts:
            return parts.pop()
        await anyio.sleep_forever()  # the rest of the body never comes

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
    }

    async def go():
        with anyio.fail_after(20):  # a bound on the test, not the assertion
            await app(scope, receive, send)

    anyio.run(go)
    assert sent[0]["status"] == 408
    assert b"request body not received within 0.3 s" in sent[1]["body"]


def test_the_token_needs_16_characters_from_the_variable_or_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SHORT_TOKEN", "x" * 15)
    with pytest.raises(GatewayError, match="too short: use at least 16 characters"):
        load_token("SHORT_TOKEN", None)
    monkeypatch.setenv("GOOD_TOKEN", "y" * 16)
    assert load_token("GOOD_TOKEN", None) == "y" * 16
    token_file = tmp_path / "token"
    token_file.write_text("z" * 15 + "\n")
    with pytest.raises(GatewayError, match="too short"):
        load_token(None, str(token_file))
    token_file.write_text("  " + "t" * 20 + "  \nsecond line ignored\n")
    assert load_token(None, str(token_file)) == "t" * 20  # the first line, trimmed
    token_file.write_text("")
    with pytest.raises(GatewayError, match="holds no token"):
        load_token(None, str(token_file))
    with pytest.raises(GatewayError, match="cannot read a token"):
        load_token(None, str(tmp_path / "missing"))
    with pytest.raises(GatewayError, match="not both"):
        load_token("GOOD_TOKEN", str(token_file))


def test_a_short_token_file_is_a_one_line_refusal_of_serve(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("short\n")
    result = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "serve", "--port", "0", "--auth-token-file", str(token_file)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "mcpgw: the bearer token is too short: use at least 16 characters (e.g. `openssl rand -hex 32`)"
    ]


def open_session(client: httpx.Client, path: str, auth: dict) -> dict:
    """A handshake-era session: the headers its requests carry."""
    init = client.post(
        path,
        headers={**HEADERS, **auth},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
    )
    session = {
        **HEADERS,
        **auth,
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-06-18",
    }
    client.post(path, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def until(check, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:g}s")


def test_serve_options_token_file_allow_host_and_idle_timeouts(tmp_path):
    token = "k" * 24
    (tmp_path / "token").write_text(token + "\n")
    config = tmp_path / "c.yaml"
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("fx", extra="    isolation: run\n"))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--port",
            "0",
            "--config",
            str(config),
            "--mode",
            "live",
            "--cassettes-dir",
            str(tmp_path),
            "--auth-token-file",
            str(tmp_path / "token"),
            "--allow-host",
            "gw.example",
            "--session-idle-timeout",
            "3",
            "--run-idle-timeout",
            "3",
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        line = next(line for line in process.stderr if "serving MCP at" in line)
        port = re.search(r"127\.0\.0\.1:(\d+)/mcp", line).group(1)
        base, auth = f"http://127.0.0.1:{port}", {"authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, timeout=10) as client:
            # --auth-token-file: no token or a wrong one is 401; the file's token is let in.
            assert client.get("/status").status_code == 401
            assert client.get("/status", headers={"authorization": "Bearer " + "w" * 24}).status_code == 401
            status = until(
                lambda: (s := client.get("/status", headers=auth).json())["servers"]["fx"]["state"] == "ready" and s,
                "fx ready",
            )
            assert status["servers"]["fx"]["run_instances"] == 0
            # --allow-host: that name is a Host (and Origin) the gateway answers; another is refused.
            assert client.get("/status", headers={**auth, "host": f"gw.example:{port}"}).status_code == 200
            assert client.get("/status", headers={**auth, "origin": "https://gw.example"}).status_code == 200
            other = client.get("/status", headers={**auth, "host": f"other.example:{port}"})
            assert other.status_code == 421 and "--allow-host" in other.text
            assert client.get("/status", headers={**auth, "origin": "https://other.example"}).status_code == 403
            # --session-idle-timeout 3: a session left alone is closed; its id is then unknown (404). The timeouts
            # are 3 s, not 1: what must still be there is asked at once, well within them on a busy machine, and
            # what must be gone is waited for by polling (no fixed sleep against a tight deadline).
            session = open_session(client, "/mcp", auth)
            assert (
                client.post("/mcp", headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}).status_code
                == 200
            )
            # Each look is itself activity, so look after ever longer silences (4 s is past the timeout).
            for silence in (4, 8, 16):
                time.sleep(silence)
                gone = client.post("/mcp", headers=session, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
                if gone.status_code == 404:
                    break
            assert gone.status_code == 404, gone.text
            # --run-idle-timeout 3: a run's own instance (isolation: run) stops once the run is idle.
            call = {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": "hi"}},
            }  # one server: its own names
            answer = client.post("/mcp?run=r1", headers=open_session(client, "/mcp?run=r1", auth), json=call)
            assert answer.status_code == 200 and "echo: hi" in answer.text
            assert client.get("/status", headers=auth).json()["servers"]["fx"]["run_instances"] == 1
            until(
                lambda: client.get("/status", headers=auth).json()["servers"]["fx"]["run_instances"] == 0,
                "the idle run's instance stopping",
            )
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
