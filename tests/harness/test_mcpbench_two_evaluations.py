"""Issue 41 item 4, with MCP-Bench's own runner: two evaluations of the same tasks recorded through one gateway,
each with its own `mcpgw connect mcpbench --run A|B`, then B replayed alone on a fresh gateway.

Its model client (an AzureOpenAI the runner builds) could carry no run id, so B's untagged conversation was bound
to the first recorded one holding its first prompt, A's: the runner finished with rc 0 and 0 misses, and B's result
file was A's. Now the model side is tagged in the Azure endpoint's path (`.../runs/B`, as `mcpgw connect --run`
prints it): B replayed alone gives B's own result file. An untagged model client on that recording is refused,
never given A's conversation.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from mcpgw.recorder.calllog import iter_calls
from mcpgw.runs.gateway_process import GatewayProcess
from tests.conftest import ROOT
from tests.harness.mcpbench_model import MCPBenchModel
from tests.harness.test_mcpbench_runner import (
    ARCHIVE,
    PLANS,
    SERVERS,
    connect,
    harness_python,
    run_benchmark,
    task_file,
    unpack_harness,
    without_timings,
)

# Evaluation B's model plans the first task otherwise: the same first prompt, another answer.
PLANS_B = {
    **PLANS,
    "Reactor X": [
        {
            "tool": "Unit Converter:convert_temperature",
            "parameters": {"value": 400, "from_unit": "fahrenheit", "to_unit": "celsius"},
        },
    ],
}


def test_two_evaluations_sharing_a_first_prompt_replay_one_alone_as_itself(tmp_path, built_cache):
    if not ARCHIVE.exists():
        pytest.fail(f"no MCP-Bench snapshot at {ARCHIVE} (CI puts the shared folder beside the clone)")
    python = harness_python()
    harness = unpack_harness(tmp_path / "src")
    task_file(harness, harness / "three_tasks.json")
    cassettes = tmp_path / "cassettes"
    model = MCPBenchModel(PLANS).start()
    env = {**os.environ, "MCPGW_CACHE": str(built_cache)}
    record = GatewayProcess(
        [
            "--mode",
            "record",
            "--config",
            str(ROOT / "servers.lock.yaml"),
            "--servers",
            *SERVERS,
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "two",
            "--llm-base-url",
            model.base_url,
        ],
        tmp_path / "record.log",
        env=env,
    )
    try:
        for run, plans in (("A", PLANS), ("B", PLANS_B)):
            model.plans = plans
            connect(record, harness, run)
            run_benchmark(
                python,
                harness,
                record,
                tmp_path / f"recorded-{run}.json",
                tmp_path / f"cache-{run}",
                env,
                model_run=run,
            )
    finally:
        record.stop()
        model.stop()
    recorded = {run: without_timings(json.loads((tmp_path / f"recorded-{run}.json").read_text())) for run in "AB"}
    assert recorded["A"] != recorded["B"]

    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    for tagged in (True, False):
        log = f"replay-{'tagged' if tagged else 'untagged'}"
        replay = GatewayProcess(
            ["--mode", "replay", "--cassettes-dir", str(cassettes), "--cassette", "two", "--log-cassette", log],
            tmp_path / f"{log}.log",
            env=offline,
        )
        output = tmp_path / f"{log}.json"
        try:
            connect(replay, harness, "B")
            try:
                run_benchmark(
                    python,
                    harness,
                    replay,
                    output,
                    tmp_path / f"cache-{log}",
                    {**offline, "PATH": "/nonexistent"},
                    model_run="B" if tagged else None,
                    check=tagged,
                    timeout=900 if tagged else 90,
                )
            except subprocess.TimeoutExpired:  # refused, the runner retries its model call with backoff for long
                assert not tagged
        finally:
            replay.stop()
        calls = list(iter_calls(cassettes / log))
        if tagged:  # B's own conversation and tool calls, nothing missed
            assert without_timings(json.loads(output.read_text())) == recorded["B"]
            assert {c["outcome"] for c in calls} <= {"hit", "ok", "tool_error"}, {c["outcome"] for c in calls}
        else:  # refused, saying how to tag: never A's file under B's name
            replayed = without_timings(json.loads(output.read_text())) if output.exists() else None
            assert replayed != recorded["A"]
            refused = [c for c in calls if c["server"] == "@model" and c["outcome"] == "miss"]
            assert refused and "cannot be told" in refused[0]["error"] and "/runs/<id>" in refused[0]["error"]
