"""Bad input and misbehaving upstreams: each gets a clear error and the gateway keeps serving.

The upstreams here are `tests/fixtures/misbehaving_server.py` (raw JSON-RPC over
stdio, misbehaving on request) started as subprocesses by a real `mcpgw serve`, run in this process
(tests/inprocess.py): the fast tier.
"""

from __future__ import annotations

import json
import time

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.gateway.errors.tree import UPSTREAM_TIMEOUT
from tests.conftest import misbehaving_entry, pid_alive
from tests.inprocess import call_records

CONFIG = "version: 1\nservers:\n" + "".join(
    [
        misbehaving_entry("good"),
        misbehaving_entry("other"),
        misbehaving_entry("dead", "--exit-at-start"),
        misbehaving_entry("banner", "--garbage-at-start"),
        misbehaving_entry("nokey", extra="    env: [MCPGW_TEST_UNSET_KEY]\n"),
        "  nocmd:\n    command: /nonexistent/server-binary\n",
    ]
)


pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(inprocess_factory):
    # --require-keys: `nokey` is not started without its key (without the flag it starts: test_missing_keys.py)
    return inprocess_factory(CONFIG, "--call-timeout", "1.5", "--max-response-bytes", "100000", "--require-keys")


async def acall(gateway, name: str, arguments: dict, *, mode: str = "legacy", **kwargs):
    async def go():
        with anyio.fail_after(30):
            async with Client(gateway.url, mode=mode) as client:
                return await client.call_tool(name, arguments, **kwargs)

    return await arun(go)


async def arun(fn):
    """fn(), with the one real error pulled out of the task groups' exception groups."""
    try:
        return await fn()
    except BaseExceptionGroup as group:
        raise _first_leaf(group) from None


def call(gateway, name: str, arguments: dict, *, mode: str = "legacy", **kwargs):
    """`acall` for a test that is not async (other modules import it)."""
    return run(lambda: acall(gateway, name, arguments, mode=mode, **kwargs))


def run(fn):
    """anyio.run, with the one real error pulled out of the task groups' exception groups (other modules
    import it; an async test awaits `arun`)."""
    try:
        return anyio.run(fn)
    except BaseExceptionGroup as group:
        raise _first_leaf(group) from None


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


async def test_start_failures_are_reported_with_reasons_and_do_not_block_others(gateway):
    status = gateway.status()["servers"]
    assert status["good"]["state"] == "ready"
    assert status["banner"]["state"] == "ready"  # a banner on stdout before the handshake is tolerated
    assert status["dead"]["state"] == "unavailable"
    assert "missing database" in status["dead"]["reason"]
    assert status["nokey"]["state"] == "unavailable"
    assert "MCPGW_TEST_UNSET_KEY" in status["nokey"]["reason"]
    assert "command not found" in status["nocmd"]["reason"]
    result = await acall(gateway, "good__echo", {"message": "hi"})
    assert result.content[0].text == "echo: hi"


async def test_dead_upstream_call_names_the_reason(gateway):
    with pytest.raises(MCPError) as err:
        await acall(gateway, "nokey__echo", {"message": "hi"})
    # never started: its tools are not offered, and a call naming it says why (issue 44 item 14), not "Unknown tool"
    assert "not available" in str(err.value) and "MCPGW_TEST_UNSET_KEY" in str(err.value), str(err.value)
    assert "MCPGW_TEST_UNSET_KEY" in gateway.server("nokey")["reason"]


async def test_unknown_tool_suggests_near_names(gateway):
    with pytest.raises(MCPError) as err:
        await acall(gateway, "good__ecoh", {"message": "hi"})
    assert "good__echo" in str(err.value)
    with pytest.raises(MCPError) as err:
        await acall(gateway, "echo", {"message": "hi"})  # the bare upstream name
    assert "good__echo" in str(err.value)


async def test_invalid_arguments_audit_mode_forwards_and_logs(gateway):
    result = await acall(gateway, "good__echo", {"message": 5})
    assert result.content[0].text == "echo: 5"  # audit: forwarded
    records = export(gateway, 1)
    last = [r for r in records if r["exposed_name"] == "good__echo"][-1]
    assert last["validation"]["valid"] is False
    assert last["validation"]["errors"][0]["keyword"] == "type"
    assert last["validation"]["errors"][0]["path"] == "$.message"


async def test_invalid_arguments_enforce_mode_is_not_forwarded(inprocess_factory):
    gateway = inprocess_factory(CONFIG, "--validate", "enforce")
    result = await acall(gateway, "good__echo", {"mesage": "hi"})
    assert result.is_error
    text = result.content[0].text
    assert "$.message" in text and "missing" in text and "not forwarded" in text
    assert "'mesage' was unexpected" in text
    result = await acall(gateway, "good__echo", {"message": ["a"]})
    assert 'expected type "string", received ["a"]' in result.content[0].text
    records = export(gateway, 2)
    assert [r["outcome"] for r in records] == ["rejected", "rejected"]


async def test_schema_that_is_itself_invalid(inprocess_factory):
    audit = inprocess_factory(CONFIG)
    assert (await acall(audit, "good__bad_schema", {})).is_error is False
    (record,) = export(audit, 1)
    assert record["validation"]["schema_invalid"] is True and record["validation"]["valid"] is False
    enforce = inprocess_factory(CONFIG, "--validate", "enforce")
    result = await acall(enforce, "good__bad_schema", {})
    assert result.is_error and "schema is itself invalid" in result.content[0].text


async def test_arguments_not_an_object(gateway):
    """The SDK refuses the call (-32602) before any handler runs; the agent made it all the same, so the call log
    has it, refused, with the tool's own verdict on its arguments when the tool is known."""
    response = post(
        gateway,
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "good__echo", "arguments": [1, 2]}},
    )
    assert response["error"]["code"] == -32602
    no_name = post(gateway, {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"arguments": {}}})
    assert no_name["error"]["code"] == -32602
    per_server = httpx.post(
        gateway.base + "/servers/good/mcp",
        headers=HEADERS,
        timeout=10,
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": "hi"}},
    )
    assert "-32602" in per_server.text, per_server.text
    listed, unnamed, scoped = export(gateway, 3)
    assert listed["exposed_name"] == "good__echo" and listed["server"] == "good" and listed["tool"] == "echo"
    assert listed["arguments"] == [1, 2] and listed["outcome"] == "rejected" and listed["source"] is None
    assert "arguments: Input should be a valid dictionary" in listed["error"]
    assert listed["validation"]["valid"] is False and listed["validation"]["errors"][0]["keyword"] == "type"
    assert (
        unnamed["exposed_name"] == ""
        and unnamed["outcome"] == "rejected"
        and "name: Field required" in unnamed["error"]
    )
    assert scoped["endpoint"] == "/servers/good/mcp" and scoped["tool"] == "echo" and scoped["arguments"] == "hi"
    assert [r["run_id"] for r in (listed, unnamed, scoped)] == [listed["run_id"]] * 3


async def test_malformed_json_rpc_and_unknown_method(gateway):
    session = open_session(gateway)
    bad = httpx.post(gateway.url, content=b"{not json", headers=session, timeout=10)
    assert bad.status_code == 400
    assert "Parse error" in bad.text or "parse" in bad.text.lower()
    not_rpc = httpx.post(gateway.url, json={"hello": "world"}, headers=session, timeout=10)
    assert not_rpc.status_code == 400
    unknown = post(gateway, {"jsonrpc": "2.0", "id": 9, "method": "does/not/exist"}, session)
    assert unknown["error"]["code"] == -32601
    assert (await acall(gateway, "good__echo", {"message": "still here"})).content[0].text == "echo: still here"


async def test_upstream_crash_mid_call_fails_fast_and_restarts(gateway):
    pid = gateway.server("good")["pid"]
    started = time.monotonic()
    with pytest.raises(MCPError) as err:
        await acall(gateway, "good__crash", {})
    assert time.monotonic() - started < 1.5
    assert "connection lost" in str(err.value) and "crashing on purpose" in str(err.value)
    # Meanwhile, and after, the other server answers.
    assert (await acall(gateway, "other__echo", {"message": "x"})).content[0].text == "echo: x"
    info = gateway.wait_state("good", ("ready",), timeout=20)
    assert info["pid"] != pid and info["restarts"] >= 1
    assert not pid_alive(pid)
    assert (await acall(gateway, "good__echo", {"message": "back"})).content[0].text == "echo: back"


async def test_hanging_call_times_out_with_a_clear_error(gateway):
    started = time.monotonic()
    with pytest.raises(MCPError) as err:
        await acall(gateway, "good__hang", {})
    elapsed = time.monotonic() - started
    assert 1.4 < elapsed < 5
    assert err.value.code == UPSTREAM_TIMEOUT and "no answer to tools/call" in str(err.value)
    assert export(gateway, 1)[-1]["outcome"] == "timeout"
    assert (await acall(gateway, "good__echo", {"message": "ok"})).content[0].text == "echo: ok"


async def test_progress_extends_the_timeout(gateway):
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    result = await acall(gateway, "good__slow", {"seconds": 3}, progress_callback=on_progress)
    assert result.content[0].text == "slept 3.0"
    assert seen == [1, 2, 3, 4]
    with pytest.raises(MCPError) as err:  # the same call without progress exceeds the 1.5 s silence limit
        await acall(gateway, "good__slow", {"seconds": 3})
    assert err.value.code == UPSTREAM_TIMEOUT and "limit 1.5s without progress" in str(err.value)


async def test_response_larger_than_limit(gateway):
    with pytest.raises(MCPError) as err:
        await acall(gateway, "good__huge", {"bytes": 500_000})
    assert "exceeds the gateway's limit of 100000 bytes (mcpgw serve --max-response-bytes N raises it)" in str(
        err.value
    )
    assert len((await acall(gateway, "good__huge", {"bytes": 50_000})).content[0].text) == 50_000
    assert gateway.server("good")["restarts"] == 0  # the server itself was fine


async def test_garbage_on_stdout_is_skipped(gateway):
    assert (await acall(gateway, "good__garbage", {})).content[0].text == "after garbage"
    assert (await acall(gateway, "good__echo", {"message": "x"})).content[0].text == "echo: x"


async def test_client_disconnect_mid_call(gateway):
    session = open_session(gateway)
    body = {
        "jsonrpc": "2.0",
        "id": 77,
        "method": "tools/call",
        "params": {"name": "good__slow", "arguments": {"seconds": 1}},
    }
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(gateway.url, json=body, headers=session, timeout=0.3)
    assert (await acall(gateway, "good__echo", {"message": "alive"})).content[0].text == "echo: alive"
    assert gateway.server("good")["state"] == "ready"


async def test_list_changed_reaches_the_client_and_sampling_is_relayed(gateway):
    notes = []

    async def on_message(message):
        notes.append(getattr(message, "method", type(message).__name__))

    async def sampling(ctx, params):
        from mcp_types import CreateMessageResult, TextContent

        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="four"), model="test")

    async def go():
        with anyio.fail_after(30):
            async with Client(
                gateway.url, mode="legacy", message_handler=on_message, sampling_callback=sampling
            ) as client:
                before = {t.name for t in (await client.list_tools()).tools}
                answer = await client.call_tool("good__ask_client", {})
                await client.call_tool("good__add_tool", {})
                with anyio.fail_after(10):
                    while "notifications/tools/list_changed" not in notes:
                        await anyio.sleep(0.05)
                after = {t.name for t in (await client.list_tools()).tools}
                return before, after, answer

    before, after, answer = await arun(go)
    assert after - before == {"good__extra_0"}
    assert json.loads(answer.content[0].text)["content"]["text"] == "four"


async def test_output_schema_verdict_is_logged(gateway):
    await acall(gateway, "good__structured", {"out": {"n": 2}})
    # The SDK client checks it too, after the gateway passed it on (so the gateway did not refuse it).
    with pytest.raises(RuntimeError, match="Invalid structured content returned by tool good__structured"):
        await acall(gateway, "good__structured", {"out": {"n": "two"}})
    records = [r for r in export(gateway, 2) if r["tool"] == "structured"]
    assert records[0]["output_validation"]["valid"] is True
    assert records[1]["output_validation"]["valid"] is False


# -- helpers ----------------------------------------------------------------------


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def open_session(gateway) -> dict:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    response = httpx.post(gateway.url, json=init, headers=HEADERS, timeout=10)
    response.raise_for_status()
    headers = {**HEADERS, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    httpx.post(gateway.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=10)
    return headers


def post(gateway, message: dict, headers: dict | None = None) -> dict:
    headers = headers or open_session(gateway)
    response = httpx.post(gateway.url, json=message, headers=headers, timeout=10)
    text = response.text
    if text.startswith("event:") or "data:" in text:
        text = next(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def export(gateway, count: int) -> list[dict]:
    """The call log, read while the gateway runs (LMDB readers do not block the writer), once it
    holds at least `count` records with an outcome: the writer thread commits after the answer."""
    deadline = time.monotonic() + 10
    records: list[dict] = []
    while time.monotonic() < deadline:
        records = call_records(gateway)
        if len(records) >= count and all(r.get("outcome") is not None for r in records):
            return records
        time.sleep(0.05)
    raise AssertionError(f"the call log never held {count} finished record(s): {records}")


async def test_client_cancellation_reaches_the_upstream(gateway):
    """Abandoned once the upstream is known to be working on it (its first progress note), not after a guessed
    time; then the upstream's record of cancellations is polled until it shows it (60 s at most)."""

    async def go():
        with anyio.fail_after(60):
            async with Client(gateway.url, mode="legacy") as client:
                working = anyio.Event()

                async def on_progress(progress, total, message):
                    working.set()

                async with anyio.create_task_group() as tg:

                    async def abandoned() -> None:
                        await client.call_tool(
                            "good__slow", {"seconds": 4}, progress_callback=on_progress
                        )  # a note a second

                    tg.start_soon(abandoned)
                    await working.wait()
                    tg.cancel_scope.cancel()
                while True:
                    seen = json.loads((await client.call_tool("good__cancelled", {})).content[0].text)
                    if seen:
                        return seen
                    await anyio.sleep(0.1)

    assert len(await arun(go)) == 1  # the upstream got notifications/cancelled for the abandoned call
    first = export(gateway, 2)[0]  # the abandoned call, then at least one good__cancelled
    assert first["outcome"] == "upstream_error" and "abandoned" in first["error"]


async def test_servers_command_and_liveness(gateway, capsys):
    """`mcpgw servers`, the command line's own entry point (`mcpgw.cli.main`) run here."""
    from mcpgw.cli import main

    assert httpx.get(gateway.base + "/healthz", timeout=5).json()["ok"] is True
    capsys.readouterr()
    assert main(["servers", "--url", gateway.base]) == 1  # some servers are unavailable
    table = capsys.readouterr().out
    assert "missing database" in table and "ready" in table
    main(["servers", "--url", gateway.base, "--json"])
    assert json.loads(capsys.readouterr().out)["servers"]["nokey"]["state"] == "unavailable"
    assert main(["servers", "--url", "http://127.0.0.1:9"]) == 2
    assert "no gateway answering" in capsys.readouterr().err


async def test_list_changed_reaches_2026_clients_on_listen_streams(gateway):
    async def go():
        with anyio.fail_after(30):
            async with Client(gateway.url, mode="2026-07-28") as client:
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("other__add_tool", {})
                    async for event in subscription:
                        return type(event).__name__, {t.name for t in (await client.list_tools()).tools}

    kind, names = await arun(go)
    assert kind == "ToolsListChanged" and "other__extra_0" in names
