"""`mcpgw serve --stdio` answers a line that is not one JSON-RPC message (gateway.stdio.stdio_guard).

The SDK's reader dropped such lines without a word: a request with a usable id and a
wrong shape left its client waiting forever. The gateway replays the default cassette
(real servers, recorded), spoken to as a raw client and as the SDK's stdio Client.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT
from tests.gateway.test_bad_input import run

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
SUM = {
    "jsonrpc": "2.0",
    "id": 9,
    "method": "tools/call",
    "params": {"name": "everything__get-sum", "arguments": {"a": 1, "b": 2}},
}


def serve_stdio(tmp_path) -> list[str]:
    return [sys.executable, "-m", "mcpgw.cli", "serve", "--stdio", "--cassettes-dir", str(tmp_path / "cassettes")]


def test_bad_lines_are_answered_and_the_session_goes_on(tmp_path):
    bad = [
        "garbage",
        '[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]',
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1]}),
        json.dumps({"jsonrpc": "1.0", "id": "four", "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": {}, "method": "ping"}),
    ]
    expected = {None: [-32700, -32600, -32600], 3: [-32602], "four": [-32600]}  # id -> error codes, in order

    async def go() -> tuple[dict, dict]:
        command = serve_stdio(tmp_path)
        async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            lines = [
                json.dumps(INIT),
                json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                *bad,
                json.dumps(SUM),
            ]
            await process.stdin.send(("\n".join(lines) + "\n").encode())
            errors: dict = {}
            answers: dict = {}
            buffer = b""
            with anyio.fail_after(60):  # stdin stays open until every answer is in (EOF ends the session)
                while sum(map(len, errors.values())) < 5 or 9 not in answers:
                    buffer += await process.stdout.receive()
                    *complete, buffer = buffer.split(b"\n")
                    for raw in complete:
                        message = json.loads(raw)
                        if "error" in message:
                            errors.setdefault(message["id"], []).append(message["error"]["code"])
                            assert "\n" not in message["error"]["message"], message
                        else:
                            answers[message["id"]] = message["result"]
            await process.stdin.aclose()
            await process.wait()
        return errors, answers

    errors, answers = run(go)
    assert errors == expected
    assert answers[9]["content"][0]["text"] == "The sum of 1 and 2 is 3."


def test_sdk_clients_of_both_eras_are_still_served(tmp_path):
    params = StdioServerParameters(
        command=sys.executable, args=serve_stdio(tmp_path)[1:], cwd=str(ROOT), env=dict(os.environ)
    )

    async def go(era: str) -> str:
        with anyio.fail_after(60):
            async with Client(params, mode=era) as client:
                return (await client.call_tool("everything__get-sum", {"a": 1, "b": 2})).content[0].text

    for era in ("legacy", "2026-07-28"):
        assert run(lambda: go(era)) == "The sum of 1 and 2 is 3."


def test_lines_no_json_rpc_writer_could_echo_are_refused_and_answered(tmp_path):
    """Issue 25 item 1: a lone surrogate (escaped, or its raw bytes) killed the gateway or was dropped;
    a line led by a byte order mark was dropped; NaN was taken as a number. Each gets an answer now."""
    bad = [
        (b'{"jsonrpc":"1.0","id":"\\ud800","method":"ping"}', None, -32700),
        (
            b'{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"\\udc00"}}}',
            "s1",
            -32700,
        ),
        (
            b'{"jsonrpc":"2.0","id":"n1","method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":NaN,"b":1}}}',
            "n1",
            -32700,
        ),
        (
            b'{"jsonrpc":"2.0","id":"i1","method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":1e400,"b":1}}}',
            "i1",
            -32700,
        ),
    ]
    bom = b'\xef\xbb\xbf{"jsonrpc":"2.0","id":"ls1","method":"ping"}'
    # Bytes that are not UTF-8 at all (a raw surrogate's) are read as U+FFFD, as any bad byte is: answered.
    raw = b'{"jsonrpc":"2.0","id":"raw","method":"ping","params":{"x":"\xed\xa0\x80"}}'

    async def go() -> list[dict]:
        command = serve_stdio(tmp_path)
        async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            lines = [
                json.dumps(INIT).encode(),
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                *(line for line, _, _ in bad),
                bom,
                raw,
                json.dumps(SUM).encode(),
            ]
            await process.stdin.send(b"\n".join(lines) + b"\n")
            got: list[dict] = []
            buffer = b""
            with anyio.fail_after(60):
                while not any(message.get("id") == 9 for message in got) or len(got) < len(bad) + 4:
                    buffer += await process.stdout.receive()
                    *complete, buffer = buffer.split(b"\n")
                    got.extend(json.loads(raw) for raw in complete)
            await process.stdin.aclose()
            assert await process.wait() == 0
        return got

    got = run(go)
    errors = [(message["id"], message["error"]["code"]) for message in got if "error" in message]
    assert sorted(errors, key=str) == sorted([(rid, code) for _, rid, code in bad], key=str)
    by_id = {message["id"]: message for message in got if "result" in message}
    assert by_id["ls1"]["result"] == {} and by_id["raw"]["result"] == {}
    assert by_id[9]["result"]["content"][0]["text"] == "The sum of 1 and 2 is 3."


def test_a_request_before_initialize_is_told_to_initialize_and_a_modern_request_still_goes_through(tmp_path):
    """The SDK answered a handshake-era request sent before `initialize` with "Invalid request parameters"
    (and fixed the connection to the handshake era, so a 2026-07-28 request after it was refused too)."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "everything__echo", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": envelope}},
    ]

    async def go() -> dict:
        async with await anyio.open_process(serve_stdio(tmp_path), cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            await process.stdin.send("".join(json.dumps(line) + "\n" for line in lines).encode())
            answers: dict = {}
            buffer = b""
            with anyio.fail_after(60):
                while len(answers) < 2:
                    buffer += await process.stdout.receive()
                    *complete, buffer = buffer.split(b"\n")
                    for raw in complete:
                        message = json.loads(raw)
                        answers[message["id"]] = message
            await process.stdin.aclose()
            await process.wait()
        return answers

    answers = anyio.run(go)
    assert answers[1]["error"]["code"] == -32600, answers[1]
    assert answers[1]["error"]["message"].startswith("Invalid Request: tools/call before initialize: send initialize")
    assert len(answers[2]["result"]["tools"]) > 10, answers[2]


@pytest.mark.real
def test_an_id_in_flight_is_refused_until_answered_or_cancelled(tmp_path):
    """The SDK ran a second request under an id already in flight and answered both under it: the client
    could not tell which answer was whose. As over HTTP, the second is refused; the id is free again once
    its request is answered, or cancelled (a cancelled request is never answered)."""
    config = tmp_path / "everything.yaml"
    config.write_text(
        "version: 1\nservers:\n  everything:\n    command: npx\n"
        '    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]\n'
    )
    slow = {"name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 1}}  # one server: its names
    echo = {"name": "echo", "arguments": {"message": "quick"}}

    def call(request_id, params):
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    async def go() -> list[dict]:
        command = [*serve_stdio(tmp_path), "--config", str(config), "--mode", "live"]
        async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            seen: list[dict] = []
            buffer = b""

            async def send(*messages):
                await process.stdin.send("".join(json.dumps(m) + "\n" for m in messages).encode())

            async def until(predicate):
                nonlocal buffer
                with anyio.fail_after(120):
                    while True:
                        for message in seen:
                            if predicate(message):
                                seen.remove(message)
                                return message
                        buffer += await process.stdout.receive()
                        *complete, buffer = buffer.split(b"\n")
                        seen.extend(json.loads(raw) for raw in complete if raw.strip())

            await send(INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            await until(lambda m: m.get("id") == 1)
            await send(call(7, slow), call(7, echo), call("7", echo))
            refused = await until(lambda m: m.get("id") == 7 and "error" in m)
            other = await until(lambda m: m.get("id") == "7")  # a different id (a string): answered
            first = await until(lambda m: m.get("id") == 7)
            await send(call(7, echo))  # answered: 7 is free again
            again = await until(lambda m: m.get("id") == 7)
            await send(
                call(8, slow),
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}},
                call(8, echo),
            )
            after_cancel = await until(lambda m: m.get("id") == 8)
            # Cancelled by its id as a string (the SDK matches 10 and "10" alike): it is freed, so the end of
            # input does not wait for an answer that never comes.
            await send(
                call(10, slow), {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "10"}}
            )
            await process.stdin.aclose()
            with anyio.move_on_after(30):
                await process.wait()
            if process.returncode is None:  # still waiting for an answer that never comes
                process.kill()
                raise AssertionError("the end of input waited for a request cancelled by its id as a string")
        return [refused, other, first, again, after_cancel]

    refused, other, first, again, after_cancel = anyio.run(go)
    assert refused["error"]["code"] == -32600, refused
    assert refused["error"]["message"] == (
        "Invalid Request: id 7 is already in use by a request in flight on this "
        "connection; use a new id for each request"
    ), refused
    assert other["result"]["content"][0]["text"] == "Echo: quick", other
    assert "Long running operation" in first["result"]["content"][0]["text"], first
    assert again["result"]["content"][0]["text"] == "Echo: quick", again
    assert after_cancel["result"]["content"][0]["text"] == "Echo: quick", after_cancel


def test_requests_piped_in_are_all_answered_before_the_end_of_input_ends_the_session(tmp_path):
    """`printf ... | mcpgw serve --stdio`: the session ended at the end of input with the requests still
    being answered dropped (the tools/call, in 3 runs of 3)."""
    lines = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {**SUM, "id": 3},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    done = subprocess.run(
        serve_stdio(tmp_path),
        input="".join(json.dumps(line) + "\n" for line in lines),
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines()) if "id" in message}
    assert sorted(answers) == [1, 2, 3, 4], done.stdout[-500:]
    assert answers[3]["result"]["content"][0]["text"] == "The sum of 1 and 2 is 3.", answers[3]


def test_sigterm_stops_it_while_stdin_stays_open(tmp_path):
    """The stdin reader blocked in a thread the interpreter's exit waited for: SIGTERM was ignored (and a
    first Ctrl-C in live mode) until the client closed stdin."""
    process = subprocess.Popen(
        serve_stdio(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while "tools from" not in process.stderr.readline():  # its start-up lines: serving now
            assert time.monotonic() < deadline and process.poll() is None
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)  # stdin is still open
    finally:
        if process.poll() is None:
            process.kill()
        process.stdin.close()


def test_a_tools_call_refused_as_malformed_is_in_the_call_log(tmp_path):
    """The SDK refuses `arguments` that are not an object (-32602) before any handler runs; over stdio, as over
    HTTP, the call log still has the call, refused, with the tool's verdict on its arguments."""
    from mcpgw.recorder.calllog import iter_calls

    lines = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {**SUM, "id": 2, "params": {"name": "everything__get-sum", "arguments": "1 + 2"}},
    ]
    done = subprocess.run(
        serve_stdio(tmp_path),
        input="".join(json.dumps(line) + "\n" for line in lines),
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines()) if "id" in message}
    assert answers[2]["error"]["code"] == -32602, done.stdout[-500:]
    records = [r for data in (tmp_path / "cassettes").rglob("data.mdb") for r in iter_calls(data.parent)]
    (record,) = records
    assert record["exposed_name"] == "everything__get-sum" and record["arguments"] == "1 + 2"
    assert record["outcome"] == "rejected" and record["endpoint"] == "stdio" and record["known_tool"] is True
    assert "params.arguments: Input should be a valid dictionary" in record["error"]
    assert record["validation"]["valid"] is False and record["validation"]["errors"][0]["keyword"] == "type"
