"""The Azure OpenAI route (`/openai/deployments/<deployment>/chat/completions?api-version=...`, the key in
`api-key`) with the real `openai` package's `AsyncAzureOpenAI`, built as MCP-Bench's llm/factory.py builds
it (azure_endpoint, api_key, api_version): forwarded to the scripted model as /chat/completions with the
deployment as the model, recorded; replayed with the model stopped. An exchange recorded through the
Azure client replays for the plain OpenAI client on /v1 and the reverse (same cassette entries), and with
a gateway token the `api-key` header carries it."""

from __future__ import annotations

import anyio
import openai
import pytest

from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel

FIXTURE = "version: 1\nservers:\n" + misbehaving_entry("fx")
SECRET = "sk-azure-test-never-in-the-cassette"
TOKEN = "azure-route-gateway-token-0123456789"
API_VERSION = "2024-12-01-preview"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "fx__echo",
            "description": "echo",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
]
SCRIPT = {
    ("tc", "north"): [{"tool_calls": [["fx__echo", {"text": "north"}]]}],
    ("tc", "south"): [{"text": "streamed from the south"}],
    ("tc", "west"): [{"text": "west, asked by Azure"}],
    ("tc", "east"): [{"text": "east, asked on /v1"}],
}


def conversation(marker: str) -> list[dict]:
    return [{"role": "user", "content": f"task {marker}"}]


# The deployment names the model; the body's "model" (what the Azure client is asked for) is not it. Distinct
# names, so a route that forwarded the body's model instead of the deployment would be seen doing so.
DEPLOYMENT = "team-deployment-7"


def azure(base: str, key: str, run: str) -> openai.AsyncAzureOpenAI:
    return openai.AsyncAzureOpenAI(
        azure_endpoint=base,
        azure_deployment=DEPLOYMENT,
        api_key=key,
        api_version=API_VERSION,
        max_retries=0,
        default_headers={"X-Run-Id": run},
    )


def plain(base: str, key: str, run: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0, default_headers={"X-Run-Id": run})


async def ask(client, marker: str, stream: bool = False) -> str:
    # An Azure client asks for "gpt-4o" under DEPLOYMENT; a /v1 client asks for the deployment's model by name.
    model = "gpt-4o" if isinstance(client, openai.AsyncAzureOpenAI) else DEPLOYMENT
    answer = await client.chat.completions.create(
        model=model, messages=conversation(marker), tools=TOOLS, stream=stream
    )
    if stream:
        return "".join([c.choices[0].delta.content or "" async for c in answer if c.choices])
    message = answer.choices[0].message
    if message.tool_calls:
        return f"{message.tool_calls[0].function.name}({message.tool_calls[0].function.arguments})"
    return message.content


async def conversations(base: str, key: str, crossed: bool) -> dict:
    """Run `az` through the Azure client; `west` and `east` through the Azure and the /v1 client, or
    (`crossed`, in replay) each through the other one."""
    with anyio.fail_after(60):
        az = azure(base, key, "az")
        out = {"north": await ask(az, "north"), "south": await ask(az, "south", stream=True)}
        west_client = plain(base, key, "west") if crossed else azure(base, key, "west")
        east_client = azure(base, key, "east") if crossed else plain(base, key, "east")
        out["west"] = await ask(west_client, "west")
        out["east"] = await ask(east_client, "east")
        return out


def test_azure_client_recorded_then_replayed_without_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPGW_TEST_MODEL_KEY", SECRET)
    monkeypatch.setenv("MCPGW_TEST_TOKEN", TOKEN)
    model = ScriptedModel(SCRIPT).start()
    try:
        gateway = start_gateway(
            tmp_path,
            FIXTURE,
            "--mode",
            "record",
            "--llm-base-url",
            model.base_url,
            "--llm-key-env",
            "MCPGW_TEST_MODEL_KEY",
            "--auth-token-env",
            "MCPGW_TEST_TOKEN",
            token=TOKEN,
        )
        try:
            recorded = anyio.run(conversations, gateway.base, TOKEN, False)
        finally:
            stop_gateway(gateway)
    finally:
        model.stop()
    assert recorded == {
        "north": 'fx__echo({"text": "north"})',
        "south": "streamed from the south",
        "west": "west, asked by Azure",
        "east": "east, asked on /v1",
    }
    # The model saw /chat/completions with the deployment as the model and the gateway's key, never the client's.
    assert [s["body"]["model"] for s in model.seen] == [DEPLOYMENT] * 4
    assert {s["authorization"] for s in model.seen} == {f"Bearer {SECRET}"}
    assert SECRET.encode() not in (tmp_path / "cassettes" / "test" / "data.mdb").read_bytes()

    replay = start_gateway(
        tmp_path,
        FIXTURE,
        "--mode",
        "replay",
        "--log-cassette",
        "log",
        "--auth-token-env",
        "MCPGW_TEST_TOKEN",
        token=TOKEN,
    )
    try:
        assert anyio.run(conversations, replay.base, TOKEN, True) == recorded  # the model is stopped
        with pytest.raises(openai.AuthenticationError):  # a wrong api-key is the wrong token
            anyio.run(ask, azure(replay.base, "not-the-gateway-token", "az"), "north")
        with pytest.raises(openai.ConflictError) as miss:  # never recorded: a replay miss, said
            anyio.run(ask, azure(replay.base, TOKEN, "az"), "somewhere else")
        assert miss.value.type == "replay_miss"
    finally:
        stop_gateway(replay)
