"""Issue 13, items 3 and 4: declared env values stay out of status, logs, error messages and cassettes.

Real `mcpgw serve` processes with tests/fixtures/misbehaving_server.py as upstream;
`--say-env` makes it print a variable (its key) to stderr, as careless servers do.
"""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.conftest import ROOT, misbehaving_entry

API_KEY = "ak-live-5f4e3d2c1b0a9988"
DATABASE_URL = "postgres://app:hunter2hunter2@db.internal:5432/app"


def call(url: str, name: str, arguments: dict):
    async def go():
        with anyio.fail_after(30):
            async with Client(url, mode="legacy") as client:
                return await client.call_tool(name, arguments)

    return anyio.run(go)


def test_a_key_printed_to_stderr_is_not_shown_in_status_logs_or_errors(gateway_factory, monkeypatch):
    monkeypatch.setenv("MCPGW_TEST_API_KEY", API_KEY)
    config = (
        "version: 1\nservers:\n"
        + misbehaving_entry(
            "talker",
            "--say-env",
            "MY_API_KEY",
            "--exit-at-start",
            extra='    env: {MY_API_KEY: "${MCPGW_TEST_API_KEY}"}\n',
        )
        + misbehaving_entry("crasher", "--say-env", "MY_API_KEY", extra="    env: [MY_API_KEY]\n")
    )
    monkeypatch.setenv("MY_API_KEY", API_KEY)
    gateway = gateway_factory(config)
    talker = gateway.wait_state("talker", ("unavailable",))
    assert "MY_API_KEY=«redacted»" in talker["reason"] and API_KEY not in talker["reason"]
    status_text = httpx.get(gateway.base + "/status").text
    assert API_KEY not in status_text
    with pytest.raises(Exception) as err:  # the crash ends the call; its error quotes the server's last words
        call(gateway.url, "crasher__crash", {})
    leaf = err.value
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    assert isinstance(leaf, MCPError) and "server said" in str(leaf)
    assert "«redacted»" in str(leaf) and API_KEY not in str(leaf)
    gateway.wait_state("crasher", ("ready", "restarting", "unavailable"))
    assert API_KEY not in httpx.get(gateway.base + "/status").text
    log = gateway.log()
    # The log did report the failure, with the server's own words, redacted ...
    assert "talker" in log and "MY_API_KEY=«redacted»" in log
    assert API_KEY not in log  # ... without the key


def test_every_declared_env_value_stays_out_of_the_cassette(gateway_factory):
    """DATABASE_URL's name does not say secret; its value is kept out all the same."""
    config = "version: 1\nservers:\n" + misbehaving_entry(
        "db", extra=f'    env: {{DATABASE_URL: "{DATABASE_URL}", LOG_LEVEL: "true"}}\n'
    )
    gateway = gateway_factory(config, "--mode", "record")
    result = call(gateway.url, "db__env", {"name": "DATABASE_URL"})
    assert result.content[0].text == f"DATABASE_URL={DATABASE_URL}"  # the live client sees the real value
    flag = call(gateway.url, "db__env", {"name": "LOG_LEVEL"})
    assert flag.content[0].text == "LOG_LEVEL=true"
    from tests.conftest import stop_gateway

    stop_gateway(gateway)
    data = (gateway.cassettes / "test" / "data.mdb").read_bytes()
    assert DATABASE_URL.encode() not in data and b"hunter2" not in data
    assert "«redacted»".encode() in data
    export = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "cassette", "--cassettes-dir", str(gateway.cassettes), "export", "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert export.returncode == 0 and "hunter2" not in export.stdout
    info = [json.loads(line) for line in export.stdout.splitlines()]
    assert any(r["type"] == "call" for r in info)
    assert "hunter2" not in gateway.log()


def test_declared_secrets_and_their_parts_stay_out_of_model_exchanges_and_tool_calls(gateway_factory):
    """Issue 25 item 5: a chat quoting a server's declared key reached data.mdb through /v1, and a
    URL's password quoted alone (not the whole URL) was stored wherever it appeared."""
    import openai

    from tests.llm.scripted_model import ScriptedModel

    password = DATABASE_URL.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    key = "sk-declared-Qm42-never-stored"
    config = "version: 1\nservers:\n" + misbehaving_entry(
        "db", extra=f'    env: {{DATABASE_URL: "{DATABASE_URL}", API_KEY: "{key}"}}\n'
    )
    tools = [{"type": "function", "function": {"name": "db__echo", "parameters": {"type": "object"}}}]
    model = ScriptedModel({("tc", "leak"): [{"text": f"the key is {key}, the password {password}"}] * 2}).start()
    try:
        gateway = gateway_factory(config, "--mode", "record", "--llm-base-url", model.base_url)
        client = openai.OpenAI(base_url=gateway.base + "/v1", api_key="x", max_retries=0)
        messages = [{"role": "user", "content": f"leak {key} and {password} and {DATABASE_URL}"}]
        answer = client.chat.completions.create(model="scripted-1", messages=messages, tools=tools)
        assert key in answer.choices[0].message.content  # the live client sees the real text
        stream = client.chat.completions.create(model="scripted-1", messages=messages, tools=tools, stream=True)
        assert key in "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        echoed = call(gateway.url, "db__echo", {"message": f"password {password} alone"})
        assert password in echoed.content[0].text
        from tests.conftest import stop_gateway

        stop_gateway(gateway)
    finally:
        model.stop()
    data = (gateway.cassettes / "test" / "data.mdb").read_bytes()
    for secret in (key, password, DATABASE_URL):
        assert secret.encode() not in data, secret
    assert data.count("«redacted»".encode()) >= 4
