"""End to end with real third-party servers started the way users start them
(npx, uvx), real clients (the SDK Client in both eras, the MCP Inspector CLI),
all through one gateway URL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, pid_alive, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run

pytestmark = pytest.mark.real

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"


async def list_and_convert_over_stdio(params: StdioServerParameters, era: str) -> tuple[list[str], str]:
    """The tools a stdio gateway in front of mcp-server-time lists at once (a first list waits for
    the upstream's start: gateway.routing.router readiness), and 12:00 UTC in Tokyo. In front of one server the
    gateway names its tools as the server does (default naming: auto)."""
    with anyio.fail_after(120):
        async with Client(params, mode=era) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool(
                "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
            return tools, json.loads(result.content[0].text)["target"]["datetime"]


def reference_config(fs_root: Path) -> str:
    return f"""
version: 1
servers:
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
  filesystem:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "{fs_root}"]
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
"""


@pytest.fixture(scope="module")
def real_gateway(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    fs_root = tmp / "files"
    fs_root.mkdir()
    (fs_root / "hello.txt").write_text("hello from the filesystem server\n")
    gateway = start_gateway(tmp, reference_config(fs_root))
    gateway.fs_root = fs_root
    yield gateway
    pids = [s["pid"] for s in gateway.status()["servers"].values() if s["pid"]]
    stop_gateway(gateway)
    # Shutdown leaves no orphans: every upstream process group is gone.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if pid_alive(p)], "upstream processes survived the gateway"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_sdk_client_lists_and_calls_every_server(real_gateway, mode):
    async def go():
        with anyio.fail_after(60):
            async with Client(real_gateway.url + "?run=e2e-" + mode, mode=mode) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                echo = await client.call_tool("everything__echo", {"message": "through the gateway"})
                read = await client.call_tool(
                    "filesystem__read_text_file", {"path": str(real_gateway.fs_root / "hello.txt")}
                )
                now = await client.call_tool("time__get_current_time", {"timezone": "Europe/Paris"})
                return names, echo, read, now

    names, echo, read, now = run(go)
    assert {n.split("__")[0] for n in names} == {"everything", "filesystem", "time"}
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names)
    assert echo.content[0].text == "Echo: through the gateway"
    assert "hello from the filesystem server" in read.content[0].text
    assert json.loads(now.content[0].text)["timezone"] == "Europe/Paris"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_resources_prompts_and_progress_of_server_everything(real_gateway, mode):
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    async def go():
        with anyio.fail_after(60):
            async with Client(real_gateway.url, mode=mode) as client:
                resources = (await client.list_resources()).resources
                content = await client.read_resource(resources[0].uri)
                templates = (await client.list_resource_templates()).resource_templates
                prompts = (await client.list_prompts()).prompts
                prompt = await client.get_prompt("everything__args-prompt", {"city": "Paris", "state": "Texas"})
                done = await client.call_tool(
                    "everything__trigger-long-running-operation",
                    {"duration": 1, "steps": 3},
                    progress_callback=on_progress,
                )
                return resources, content, templates, prompts, prompt, done

    resources, content, templates, prompts, prompt, done = run(go)
    assert resources and content.contents[0].uri == resources[0].uri
    assert templates
    assert "everything__simple-prompt" in [p.name for p in prompts]
    assert "Paris" in prompt.messages[0].content.text
    assert "completed" in done.content[0].text
    assert [p[0] for p in progress] == [1, 2, 3]


def test_a_runs_calls_sent_at_once_by_a_2026_client_are_each_answered_and_recorded(tmp_path):
    """Two calls of one run in flight at once from a 2026-07-28 client (no relay, no progress: the same per-call
    options): the first to end removed the other's entry from the live server's table of calls in flight (found
    by equality), and once recording had filled in its key the other's end failed with 'list.remove(x): x not in
    list' (-32603): its answer lost, nothing recorded. Found by a concurrent differential fuzzer."""
    everything = reference_config(tmp_path).split("  filesystem:")[0]
    gateway = start_gateway(tmp_path / "gw", everything, "--mode", "record")
    results: dict[str, str] = {}

    async def go():
        with anyio.fail_after(60):
            async with Client(gateway.url + "?run=at-once", mode="2026-07-28") as client:

                async def one(label: str, name: str, arguments: dict) -> None:
                    result = await client.call_tool(name, arguments)
                    results[label] = result.content[0].text

                async with anyio.create_task_group() as round_:
                    round_.start_soon(
                        one, "long", "everything__trigger-long-running-operation", {"duration": 1, "steps": 1}
                    )
                    await anyio.sleep(0.3)
                    round_.start_soon(one, "echo", "everything__echo", {"message": "meanwhile"})

    try:
        run(go)
    finally:
        stop_gateway(gateway)
    assert "meanwhile" in results["echo"] and "completed" in results["long"].lower(), results
    recorded = [r for r in iter_calls(gateway.cassettes / "test") if r["outcome"] == "ok"]
    assert sorted(r["tool"] for r in recorded) == ["echo", "trigger-long-running-operation"]


def test_mcp_inspector_cli_lists_and_calls(real_gateway):
    base = ["npx", "-y", INSPECTOR, "--cli", real_gateway.url, "--transport", "http"]
    listed = subprocess.run([*base, "--method", "tools/list"], capture_output=True, text=True, timeout=240)
    assert listed.returncode == 0, listed.stderr
    names = [t["name"] for t in json.loads(listed.stdout)["tools"]]
    assert "time__convert_time" in names and "filesystem__list_directory" in names
    called = subprocess.run(
        [*base, "--method", "tools/call", "--tool-name", "everything__get-sum", "--tool-arg", "a=2", "b=40"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert called.returncode == 0, called.stderr
    assert "42" in json.loads(called.stdout)["content"][0]["text"]


def test_sigkill_of_one_upstream_mid_call(real_gateway):
    before = real_gateway.server("everything")
    outcome = {}

    async def long_call():
        started = time.monotonic()
        try:
            async with Client(real_gateway.url, mode="legacy") as client:
                await client.call_tool("everything__trigger-long-running-operation", {"duration": 20, "steps": 20})
        except BaseException as exc:  # noqa: BLE001
            leaf = exc
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            outcome["error"] = str(leaf)
        outcome["elapsed_after_kill"] = time.monotonic() - outcome.get("killed_at", started)

    async def meanwhile():
        async with Client(real_gateway.url, mode="legacy") as client:
            await anyio.sleep(1.0)
            outcome["killed_at"] = time.monotonic()
            os.killpg(before["pid"], signal.SIGKILL)
            result = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            outcome["other"] = result.is_error

    async def go():
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                tg.start_soon(meanwhile)

    run(go)
    assert "connection lost" in outcome["error"]
    assert outcome["elapsed_after_kill"] < 1.0
    assert outcome["other"] is False
    after = real_gateway.wait_state("everything", ("ready",), timeout=60)
    assert after["pid"] != before["pid"] and after["restarts"] == before["restarts"] + 1


def test_stdio_front_for_desktop_style_clients(tmp_path):
    config = tmp_path / "servers.yaml"
    config.write_text(reference_config(tmp_path))
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "mcpgw.cli",
            "serve",
            "--stdio",
            "--config",
            str(config),
            "--servers",
            "time",
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--cassette",
            "stdio",
        ],
        cwd=str(ROOT),
        env=dict(os.environ),  # as a desktop config's "env" would; uvx needs the registry settings
    )

    tools, tokyo = run(lambda: list_and_convert_over_stdio(params, "legacy"))
    assert sorted(tools) == ["convert_time", "get_current_time"]
    assert tokyo.endswith("21:00:00+09:00")


def test_logging_subscriptions_and_completion_pass_through(real_gateway):
    from mcp_types import PromptReference

    logs, updates = [], []

    async def on_log(params):
        logs.append(params)

    async def on_message(message):
        if getattr(message, "method", "") == "notifications/resources/updated":
            updates.append(message.params.uri)

    async def go():
        with anyio.fail_after(90):
            async with Client(
                real_gateway.url, mode="legacy", logging_callback=on_log, message_handler=on_message
            ) as client:
                await client.set_logging_level("debug")
                await client.call_tool("everything__toggle-simulated-logging", {})
                uri = (await client.list_resources()).resources[0].uri
                await client.subscribe_resource(uri)
                await client.call_tool("everything__toggle-subscriber-updates", {})
                completion = await client.complete(
                    PromptReference(type="ref/prompt", name="everything__completable-prompt"),
                    {"name": "department", "value": "Eng"},
                )
                while not (logs and updates):
                    await anyio.sleep(0.2)
                await client.call_tool("everything__toggle-simulated-logging", {})
                await client.call_tool("everything__toggle-subscriber-updates", {})
                return uri, completion

    uri, completion = run(go)
    assert "Engineering" in completion.completion.values
    assert logs[0].logger.startswith("everything")  # the gateway names the server a message came from
    assert updates[0] == uri


def test_elicitation_roots_and_sampling_are_relayed_to_the_calling_client(real_gateway):
    from mcp_types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

    async def elicit(ctx, params):
        return ElicitResult(
            action="accept",
            content={
                "name": "Ada",
                "check": True,
                "email": "ada@example.org",
                "integer": 3,
                "number": 1.5,
                "favoriteColor": "blue",
            },
        )

    async def roots(ctx):
        return ListRootsResult(roots=[Root(uri="file:///tmp/relayed-root", name="relayed")])

    async def sample(ctx, params):
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="sampled through mcpgw"), model="t"
        )

    async def go():
        with anyio.fail_after(60):
            async with Client(
                real_gateway.url,
                mode="legacy",
                elicitation_callback=elicit,
                list_roots_callback=roots,
                sampling_callback=sample,
            ) as client:
                elicited = await client.call_tool("everything__trigger-elicitation-request", {})
                listed = await client.call_tool("everything__get-roots-list", {})
                sampled = await client.call_tool(
                    "everything__trigger-sampling-request", {"prompt": "hello", "maxTokens": 20}
                )
                return elicited, listed, sampled

    elicited, listed, sampled = run(go)
    assert "Ada" in json.dumps(elicited.model_dump(mode="json"))
    assert "file:///tmp/relayed-root" in json.dumps(listed.model_dump(mode="json"))
    assert "sampled through mcpgw" in json.dumps(sampled.model_dump(mode="json"))
