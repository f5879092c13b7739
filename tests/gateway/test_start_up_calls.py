"""A call made while the servers are still starting waits for them, as lists do, instead of "unknown".

A client that knows its tool names (a harness replaying a task, a script) may call right after
`initialize`. The catalog is empty until the servers' first starts settle: `tools/call`, `prompts/get`
and `resources/read` on `/mcp` and over stdio answered "Unknown tool" / "Unknown prompt" / "No server
offers resource", a wrong answer (and a call-log record `rejected`). The server here is
server-everything behind a three-second delay, as a cold npx cache makes it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import anyio
import httpx
import pytest

from tests.conftest import ROOT, SERVING

pytestmark = pytest.mark.real

EVERYTHING = "npx -y @modelcontextprotocol/server-everything@2026.8.31 stdio"
PROTOCOL = "2025-06-18"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "eager", "version": "1"}},
}
REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "early"}}},
    {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "simple-prompt"}},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "resources/read",
        "params": {"uri": "demo://resource/static/document/architecture.md"},
    },
]


def slow_config(tmp_path) -> str:
    path = tmp_path / "slow.yaml"
    path.write_text(
        f'version: 1\nservers:\n  everything:\n    command: sh\n    args: ["-c", "sleep 3; exec {EVERYTHING}"]\n'
    )
    return str(path)


def check(answers: dict) -> None:
    assert answers[1]["result"]["content"][0]["text"] == "Echo: early", answers[1]
    assert answers[2]["result"]["messages"], answers[2]
    assert answers[3]["result"]["contents"][0]["uri"] == "demo://resource/static/document/architecture.md", answers[3]


def test_calls_over_stdio_right_after_initialize_wait_for_the_servers(tmp_path):
    command = [
        sys.executable,
        "-m",
        "mcpgw.cli",
        "serve",
        "--stdio",
        "--config",
        slow_config(tmp_path),
        "--mode",
        "live",
        "--cassettes-dir",
        str(tmp_path / "cassettes"),
    ]

    async def go() -> dict:
        async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            lines = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, *REQUESTS]
            await process.stdin.send("".join(json.dumps(line) + "\n" for line in lines).encode())
            answers: dict = {}
            buffer = b""
            with anyio.fail_after(120):
                while len(answers) < 1 + len(REQUESTS):
                    buffer += await process.stdout.receive()
                    *complete, buffer = buffer.split(b"\n")
                    for raw in complete:
                        message = json.loads(raw)
                        if "id" in message:  # not the list_changed notifications the servers' start sends
                            answers[message["id"]] = message
            await process.stdin.aclose()
            await process.wait()
        return answers

    check(anyio.run(go))


def test_calls_over_http_right_after_initialize_wait_for_the_servers(tmp_path):
    log = tmp_path / "gateway.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--config",
            slow_config(tmp_path),
            "--port",
            "0",
            "--mode",
            "live",
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (said := SERVING.search(log.read_text())):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = said.group(1) + "/mcp"

        async def go() -> dict:
            async with httpx.AsyncClient(timeout=120) as client:
                headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": PROTOCOL}
                opened = await client.post(url, json=INIT, headers=headers)
                headers["mcp-session-id"] = opened.headers["mcp-session-id"]
                await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
                assert (
                    await client.get(said.group(1) + "/readyz")
                ).status_code == 503  # still starting: the race is real
                answers = {}

                async def ask(request: dict) -> None:  # all at once: none waits behind another's wait
                    text = (await client.post(url, json=request, headers=headers)).text
                    body = json.loads(
                        re.findall(r"^data: (.*)$", text, re.M)[-1] if text.startswith(("event:", "data:")) else text
                    )
                    answers[body["id"]] = body

                async with anyio.create_task_group() as group:
                    for request in REQUESTS:
                        group.start_soon(ask, request)
                return answers

        answers = anyio.run(go)
        check(answers)
    finally:
        process.terminate()
        process.wait(15)
