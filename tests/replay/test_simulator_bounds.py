"""The simulator is bounded and checked, through a real `mcpgw serve --mode replay --on-miss simulate` and a
scripted OpenAI-compatible simulator on 127.0.0.1 that answers too much, too slowly, too deep or malformed.

One gateway serves every case (each call's arguments pick its script); the calls run once (module fixture),
then the gateway is stopped and its call log and overlay read. Each test checks one promise:
- an answer over --max-response-bytes is a miss, read no further (the gateway's peak memory stays near);
- --simulator-timeout bounds the whole answer, its retry included;
- JSON nested 200,000 deep is a miss saying so, not a RecursionError;
- content that is no valid CallToolResult is a miss, and nothing of it is stored;
- `mcpgw/` keys are stripped, and the answer is stored once (not again in the simulator's exchange);
- a structuredContent that is not an object gets the one retry;
- a call its schema refuses gets the validation error as an isError result, labelled missed, never simulated.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.store import CassetteStore
from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.specs.spec_record import spec_to_dict
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel

LOOKUP = {
    "name": "lookup",
    "description": "Looks a word up",
    "annotations": {"readOnlyHint": True},
    "inputSchema": {"type": "object", "required": ["word"], "properties": {"word": {"type": "string"}}},
}
CONVERT = {
    "name": "convert",
    "description": "Converts a temperature",
    "inputSchema": {"type": "object", "required": ["value"], "properties": {"value": {"type": "number"}}},
    "outputSchema": {"type": "object", "required": ["celsius"], "properties": {"celsius": {"type": "number"}}},
}
LIMIT = 1024 * 1024  # --max-response-bytes
TIMEOUT = 4.0  # --simulator-timeout
MARK = "kept-once-" + "q" * 50_000  # the text of one answer, to count its copies in the overlay


def result_text(value: dict[str, Any]) -> dict[str, str]:
    return {"text": json.dumps(value)}


def converted(structured: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}


# (tool, arguments, the simulator's replies to it); each call's own word or number is its script's marker
CASES: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "huge": ("lookup", {"word": "w-huge"}, [{"text": "x" * (40 * 1024 * 1024)}]),
    "slow": (
        "convert",
        {"value": 9876.5},
        [
            {"hold": 3, **result_text(converted({"celsius": "warm"}))},
            {"hold": 3, **result_text(converted({"celsius": 15.0}))},
        ],
    ),
    "deep": ("lookup", {"word": "w-deep"}, [{"text": "[" * 200_000 + "]" * 200_000}]),
    "text-object": (
        "lookup",
        {"word": "w-textobj"},
        [result_text({"content": [{"type": "text", "text": {"an": "object"}}], "isError": False})],
    ),
    "image-number": (
        "lookup",
        {"word": "w-image"},
        [result_text({"content": [{"type": "image", "data": 5, "mimeType": "image/png"}]})],
    ),
    "error-string": (
        "lookup",
        {"word": "w-iserror"},
        [result_text({"content": [{"type": "text", "text": "fine"}], "isError": "false"})],
    ),
    "meta": (
        "lookup",
        {"word": "w-meta"},
        [
            result_text(
                {
                    "content": [{"type": "text", "text": MARK, "_meta": {"mcpgw/source": "recorded", "keep": "me"}}],
                    "_meta": {"mcpgw/source": "recorded"},
                    "isError": False,
                }
            )
        ],
    ),
    "array-structured": (
        "convert",
        {"value": 4321.5},
        [result_text(converted([1])), result_text(converted({"celsius": 21.0}))],
    ),
    "invalid": ("convert", {"value": "abc"}, [result_text(converted({"celsius": 1.0}))]),
}


def marker(case: str) -> str:
    """What picks a case's script: its one argument's value, as the simulator is shown it."""
    return str(next(iter(CASES[case][1].values())))


def base_cassette(cassettes: Path) -> None:
    """A recording of one stateless server's catalog (no exchanges): every call misses and may be simulated."""
    base = Cassette(cassettes / "A")
    spec = ServerSpec("calc", "stdio", command="x", flags=frozenset({"stateless"}))
    base.write_info({"calc": spec_to_dict(spec)})
    base.record_catalog(
        "calc",
        {
            "init": {"serverInfo": {"name": "calc", "version": "1"}, "protocolVersion": "2025-06-18"},
            "tools": [LOOKUP, CONVERT],
        },
        {"recorded_at": 0},
    )
    base.close()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("simulator-bounds")
    cassettes = tmp / "cassettes"
    base_cassette(cassettes)
    script = {("mcpbench", marker(case)): steps for case, (_, _, steps) in CASES.items()}
    model = ScriptedModel(script, model="sim-1").start()
    out: dict[str, Any] = {"answers": {}, "seconds": {}}
    try:
        gateway = start_gateway(
            tmp,
            "version: 1\nservers:\n  x: {command: x}\n",
            "--mode",
            "replay",
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "A",
            "--overlay",
            "B1",
            "--log-cassette",
            "log",
            "--on-miss",
            "simulate",
            "--simulator-base-url",
            model.base_url,
            "--simulator-model",
            "sim-1",
            "--simulator-timeout",
            str(TIMEOUT),
            "--max-response-bytes",
            str(LIMIT),
        )
        try:

            async def go() -> None:
                for case, (tool, arguments, _) in CASES.items():  # a session each: one answer cannot spoil the next
                    before = peak_rss_mb(gateway.process.pid)
                    started = time.monotonic()
                    try:
                        with anyio.fail_after(60):
                            async with Client(f"{gateway.url}?run=r1") as client:
                                try:
                                    result = await client.call_tool(f"calc__{tool}", arguments)
                                    answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                                except MCPError as exc:
                                    answer = {"error": str(exc)}
                    except Exception as exc:  # e.g. a result the client itself cannot read
                        answer = {"error": f"client: {type(exc).__name__}: {str(exc)[:300]}"}
                    out["seconds"][case] = time.monotonic() - started
                    out["answers"][case] = answer
                    if case == "huge":
                        out["peak_growth_mb"] = peak_rss_mb(gateway.process.pid) - before

            anyio.run(go)
            out["alive"] = gateway.process.poll() is None
        finally:
            stop_gateway(gateway)
        out["log"] = gateway.log()
        out["asked"] = [json.dumps(s["body"]["messages"]) for s in model.seen]
    finally:
        model.stop()
    out["records"] = {json.dumps(r["arguments"]): r for r in iter_calls(cassettes / "log") if r.get("server") == "calc"}
    store = CassetteStore(cassettes / "B1", create=False, readonly=True)
    try:
        out["overlay"] = [entry for _, entry in store.items("exchanges")]
    finally:
        store.env.close()
    return out


def record_of(served: dict[str, Any], case: str) -> dict[str, Any]:
    return served["records"][json.dumps(CASES[case][1])]


def kept_for(served: dict[str, Any], case: str) -> list[dict[str, Any]]:
    """The overlay's entries about one case: its answer, or the simulator's exchanges asking for it."""
    return [e for e in served["overlay"] if marker(case) in json.dumps(e.get("params"))]


def test_an_answer_over_the_response_limit_is_a_miss_read_no_further(served):
    answer = served["answers"]["huge"]
    assert "larger than the gateway's limit of 1048576 bytes" in answer.get("error", ""), answer
    assert record_of(served, "huge")["source"] == "missed" and not kept_for(served, "huge")
    assert served["peak_growth_mb"] < 40, served["peak_growth_mb"]  # a 40 MiB answer never held whole
    assert served["alive"]


def test_the_simulator_timeout_bounds_the_whole_answer_retry_included(served):
    answer = served["answers"]["slow"]
    assert f"did not answer within {TIMEOUT:g} s" in answer.get("error", ""), answer
    assert served["seconds"]["slow"] < TIMEOUT + 1.5, served["seconds"]["slow"]  # two 3 s answers not waited out
    assert not kept_for(served, "slow")


def test_json_nested_200000_deep_is_a_miss_not_a_traceback(served):
    answer = served["answers"]["deep"]
    assert "nested deeper than 64 levels" in answer.get("error", ""), answer
    assert record_of(served, "deep")["outcome"] == "miss"
    assert "RecursionError" not in served["log"] and "Traceback" not in served["log"]


@pytest.mark.parametrize(
    "case, says",
    [
        ("text-object", "(text) is not a valid MCP block: text: Input should be a valid string"),
        ("image-number", "(image) is not a valid MCP block: data: Input should be a valid string"),
        ("error-string", '"isError" is a string, not true or false'),
    ],
)
def test_malformed_content_is_refused_before_anything_is_stored(served, case, says):
    answer = served["answers"][case]
    assert says in answer.get("error", ""), answer
    assert record_of(served, case)["source"] == "missed"
    assert not kept_for(served, case)  # neither the answer nor the simulator's exchange


def test_gateway_keys_are_stripped_and_the_answer_is_stored_once(served):
    answer = served["answers"]["meta"]
    assert answer["content"] == [{"type": "text", "text": MARK, "_meta": {"keep": "me"}}], str(answer)[:300]
    assert "mcpgw/source" not in json.dumps(answer)
    assert record_of(served, "meta")["source"] == "simulated"
    kept = kept_for(served, "meta")
    assert sorted(e["server"] for e in kept) == ["@simulator", "calc"]  # the answer, and the exchange that made it
    assert sum(json.dumps(e).count(MARK) for e in served["overlay"]) == 1  # its text stored once
    assert "mcpgw/source" not in json.dumps(served["overlay"])


def test_a_structured_content_that_is_not_an_object_gets_the_one_retry(served):
    answer = served["answers"]["array-structured"]
    assert answer.get("structuredContent") == {"celsius": 21.0}, answer
    record = record_of(served, "array-structured")
    assert record["source"] == "simulated" and record["simulator"]["attempts"] == 2
    assert any("structuredContent must be a JSON object" in asked for asked in served["asked"])


def test_a_call_its_schema_refuses_gets_the_validation_error_never_a_simulated_answer(served):
    answer = served["answers"]["invalid"]
    assert answer.get("isError") is True, answer
    assert "Invalid arguments for tool 'convert'" in answer["content"][0]["text"]
    assert "$.value" in answer["content"][0]["text"]
    record = record_of(served, "invalid")
    assert record["validation"]["valid"] is False  # the call log's own verdict (--validate audit)
    assert (record["source"], record["is_error"]) == ("missed", True)
    assert not any(marker("invalid") in asked for asked in served["asked"])  # the simulator was never asked
    assert not kept_for(served, "invalid")
