"""Issue 44, item 3: `serve --stdio --port N` also serves the model routes (`/v1`, Azure's) on 127.0.0.1:N, into the
same cassette as the stdio side: a stdio-only harness (MCPEval) has its model exchanges recorded with its tool calls
by one gateway, and replayed by one gateway with no model and no server process.

Real parts: the real `openai` client (OpenAI and Azure shapes) against a scripted model over HTTP, the SDK's stdio
client driving `mcpgw serve --stdio` in a subprocess in front of the fixture server.
"""

from __future__ import annotations

import sys

import anyio
import httpx
import openai
from mcp import Client, StdioServerParameters

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, free_port, misbehaving_entry
from tests.gateway.test_bad_input import run
from tests.llm.scripted_model import ScriptedModel

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "echo",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]
SCRIPT = {("tc", "alpha"): [{"tool_calls": [["echo", {"message": "hi"}]]}, {"text": "alpha done"}]}
API_VERSION = "2024-12-01-preview"


def agent(params: StdioServerParameters, port: int) -> dict:
    """What an MCPEval-like harness does: its tools over stdio, its model over HTTP at the same gateway."""

    async def go() -> dict:
        with anyio.fail_after(90):
            async with Client(params, mode="legacy") as client:
                base = f"http://127.0.0.1:{port}"
                assert (
                    await anyio.to_thread.run_sync(lambda: httpx.get(base + "/healthz", timeout=10))
                ).status_code == 200
                model = openai.AsyncOpenAI(base_url=base + "/v1", api_key="anything", max_retries=0)
                messages: list = [{"role": "user", "content": "task alpha"}]
                first = await model.chat.completions.create(model="scripted-1", messages=messages, tools=TOOLS)
                call = first.choices[0].message.tool_calls[0]
                result = await client.call_tool(call.function.name, {"message": "hi"})
                text = result.content[0].text
                messages += [
                    first.choices[0].message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id, "content": text},
                ]
                azure = openai.AsyncAzureOpenAI(
                    azure_endpoint=base, api_key="anything", api_version=API_VERSION, max_retries=0
                )
                final = await azure.chat.completions.create(model="scripted-1", messages=messages, tools=TOOLS)
                return {"tool": call.function.name, "result": text, "final": final.choices[0].message.content}

    return run(go)


def stdio_gateway(tmp_path, port: int, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        cwd=str(ROOT),
        args=[
            "-m",
            "mcpgw.cli",
            "serve",
            "--stdio",
            "--port",
            str(port),
            "--config",
            str(tmp_path / "c.yaml"),
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--cassette",
            "mcpeval",
            *args,
        ],
    )


def test_a_stdio_gateway_records_its_model_with_its_tools_in_one_cassette_and_replays_both(tmp_path, monkeypatch):
    (tmp_path / "c.yaml").write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    model = ScriptedModel(SCRIPT).start()
    try:
        port = free_port()
        recorded = agent(stdio_gateway(tmp_path, port, "--mode", "record", "--llm-base-url", model.base_url), port)
    finally:
        model.stop()
    assert recorded == {"tool": "echo", "result": "echo: hi", "final": "alpha done"}
    assert len(model.seen) == 2
    log = list(iter_calls(tmp_path / "cassettes" / "mcpeval"))
    assert sorted((r["server"], r.get("method") or r["endpoint"], r["outcome"]) for r in log) == [
        ("@model", "/v1/chat/completions", "recorded"),  # the Azure request is the same exchange (llm.passthrough)
        ("@model", "/v1/chat/completions", "recorded"),
        ("fx", "stdio", "ok"),
    ]

    # Replayed: the model stopped, no server process (PATH gone), one gateway answers both sides from the cassette.
    monkeypatch.setenv("PATH", "/nonexistent")
    port = free_port()
    replayed = agent(stdio_gateway(tmp_path, port, "--mode", "replay", "--log-cassette", "again"), port)
    assert replayed == recorded
    again = list(iter_calls(tmp_path / "cassettes" / "again"))
    assert sorted((r["server"], r["source"]) for r in again) == [
        ("@model", "recorded"),
        ("@model", "recorded"),
        ("fx", "recorded"),
    ]


def test_the_stdio_gateways_model_listener_wants_the_token_and_ends_with_the_input(tmp_path):
    import os
    import re
    import subprocess
    import threading
    import time

    token = "stdio-model-token-0123456789"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--stdio",
            "--port",
            "0",
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--auth-token-env",
            "MCPGW_TEST_STDIO_TOKEN",
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MCPGW_TEST_STDIO_TOKEN": token},
    )
    try:
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(process.stderr), daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while not any("and the model at" in line for line in said):
            assert time.monotonic() < deadline and process.poll() is None, "".join(said)
            time.sleep(0.05)
        line = next(line for line in said if "and the model at" in line)
        base = re.search(r"(http://127\.0\.0\.1:\d+)/v1", line).group(1)
        assert httpx.get(base + "/v1/models", timeout=10).status_code == 401
        assert (
            httpx.get(base + "/v1/models", headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code != 401
        )
        assert (
            httpx.get(base + "/status", headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code == 404
        )  # model routes only
        process.stdin.close()  # the end of input: the gateway, and its listener, end
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
