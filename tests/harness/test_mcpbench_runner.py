"""MCP-Bench's own runner, its code untouched, through the gateway by configuration alone.

The runner (`run_benchmark.py` from the pinned snapshot) runs in a virtual environment of its own
(scripts/fetch-test-servers.sh makes it). Only its `mcp_servers/commands.json` (written by
`mcpgw connect mcpbench`) and its environment (AZURE_OPENAI_ENDPOINT at the gateway) point it at us.
It runs three single-server tasks of offline servers with its judge on (five shuffled judge prompts a
task) and distraction servers on (a task's own list, and one task drawn at random), against a scripted
model served by the test, through a recording gateway; then again, the model stopped, against a
replaying gateway with PATH stripped (no server can start). Its own result file must be the same apart
from timings, and its numbers must be the ones `mcpgw eval` computes from the gateway's call log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from mcpgw.recorder.calllog import iter_calls
from mcpgw.runs.gateway_process import GatewayProcess
from tests.conftest import ROOT, SNAPSHOTS
from tests.harness.mcpbench_model import MCPBenchModel

pytestmark = pytest.mark.real

ARCHIVE = SNAPSHOTS / "Accenture+mcp-bench@09e52332b22428bf891be59047e01cb9adc063b4.tar.gz"
# The task servers, the resident Time MCP, and others the runner may add as distractions.
SERVERS = [
    "unit_converter",
    "math_mcp",
    "medical_calculator",
    "time_mcp",
    "scientific_computing",
    "bibliomantic",
    "numpy_mcp",
    "sequential_thinking",
]
TASKS = {
    "Unit Converter": "unit_converter_000",
    "Math MCP": "math_mcp_000",
    "Medical Calculator": "medical_calculator_001",
}
# Round 1 of each task: calls planned in parallel (they reach the gateway in any order).
PLANS = {
    "Reactor X": [
        {
            "tool": "Unit Converter:convert_temperature",
            "parameters": {"value": 350, "from_unit": "fahrenheit", "to_unit": "celsius"},
        },
        {
            "tool": "Unit Converter:convert_pressure",
            "parameters": {"value": 3.5, "from_unit": "bar", "to_unit": "kilopascal"},
        },
        {"tool": "Unit Converter:convert_length", "parameters": {"value": 10, "from_unit": "foot", "to_unit": "meter"}},
    ],
    "harvest from our 10 farms": [
        {"tool": "Math MCP:mean", "parameters": {"numbers": [120, 150, 150, 200, 180]}},
        {"tool": "Math MCP:median", "parameters": {"numbers": [120, 150, 150, 200, 180]}},
        {"tool": "Math MCP:max", "parameters": {"numbers": [120, 150, 150, 200, 180]}},
    ],
    "elective hip replacement": [
        {"tool": "Medical Calculator:bmi_bsa_calculator", "parameters": {"weight": 95, "height": 175}},
        {"tool": "Medical Calculator:bmi_bsa_calculator", "parameters": {"weight": "ninety-five"}},
    ],
}
# A two-server task (MCP-Bench's own): round 1 calls both of its servers.
TWO_SERVER = ("Unit Converter+Math MCP", "unit_converter_math_mcp_000")
PLANS["500 m²"] = [
    {
        "tool": "Unit Converter:convert_temperature",
        "parameters": {"value": 68, "from_unit": "fahrenheit", "to_unit": "celsius"},
    },
    {
        "tool": "Unit Converter:convert_temperature",
        "parameters": {"value": 85, "from_unit": "fahrenheit", "to_unit": "celsius"},
    },
    {"tool": "Math MCP:mean", "parameters": {"numbers": [20, 21, 24, 27, 29, 24, 22]}},
]
# Seeds Python's global random, then runs MCP-Bench's entry point unchanged (the README gives the same lines).
LAUNCHER = "import random, runpy, sys\nrandom.seed(int(sys.argv.pop(1)))\nrunpy.run_path('run_benchmark.py', run_name='__main__')\n"


def harness_python() -> Path:
    venv = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "harness_venv.py")], capture_output=True, text=True, check=True
    ).stdout.strip()
    python = Path(venv) / "bin" / "python"
    assert python.exists(), f"MCP-Bench's harness environment is missing: run scripts/fetch-test-servers.sh ({venv})"
    return python


def unpack_harness(into: Path) -> Path:
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(into, filter="data")
    (harness,) = into.glob("mcp-bench-*")
    return harness


def task_file(harness: Path, out: Path) -> Path:
    """Three of MCP-Bench's own single-server tasks; the last without its list of distraction servers, so
    the runner draws them at random (seeded by the launcher)."""
    data = json.loads((harness / "tasks" / "mcpbench_tasks_single_runner_format.json").read_text())
    kept = []
    for entry in data["server_tasks"]:
        if entry["server_name"] in TASKS:
            tasks = [t for t in entry["tasks"] if t["task_id"] == TASKS[entry["server_name"]]]
            kept.append({**entry, "tasks": tasks})
    kept[-1]["tasks"][0].pop("distraction_servers")
    out.write_text(json.dumps({**data, "server_tasks": kept, "total_tasks": len(kept)}, indent=1))
    return out


def connect(gateway: GatewayProcess, harness: Path, run: str) -> None:
    from mcpgw.cli import main

    assert (
        main(
            [
                "connect",
                "mcpbench",
                "--gateway",
                gateway.base,
                "--run",
                run,
                "-o",
                str(harness / "mcp_servers" / "commands.json"),
            ]
        )
        == 0
    )


def two_server_task_file(harness: Path, out: Path) -> Path:
    """MCP-Bench's two-server task `unit_converter_math_mcp_000`, with its own distraction servers."""
    data = json.loads((harness / "tasks" / "mcpbench_tasks_multi_2server_runner_format.json").read_text())
    kept = [
        {**entry, "tasks": [t for t in entry["tasks"] if t["task_id"] == TWO_SERVER[1]]}
        for entry in data["server_tasks"]
        if entry["server_name"] == TWO_SERVER[0]
    ][:1]
    out.write_text(json.dumps({**data, "server_tasks": kept, "total_tasks": 1}, indent=1))
    return out


def run_benchmark(
    python: Path,
    harness: Path,
    gateway: GatewayProcess,
    output: Path,
    cache: Path,
    env: dict[str, str],
    tasks: str = "three_tasks.json",
    *,
    model_run: str | None = None,
    check: bool = True,
    timeout: float = 900,
) -> subprocess.CompletedProcess:
    """The runner, seeded; `model_run`: its model client's run, in the Azure endpoint's path (gateway.sessions.run_paths)."""
    (harness / "seeded_run_benchmark.py").write_text(LAUNCHER)
    endpoint = gateway.base + (f"/runs/{model_run}" if model_run else "")
    env = {
        **env,
        "AZURE_OPENAI_ENDPOINT": endpoint,
        "AZURE_OPENAI_API_KEY": "not-a-real-key",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("OPENROUTER_API_KEY", None)
    done = subprocess.run(
        [
            str(python),
            "seeded_run_benchmark.py",
            "7",
            "--models",
            "gpt-4o",
            "--tasks-file",
            str(harness / tasks),
            "--distraction-count",
            "3",
            "--output",
            str(output),
            "--cache-dir",
            str(cache),
        ],
        cwd=harness,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    (output.parent / (output.stem + ".log")).write_text(done.stdout + done.stderr)
    if check:
        assert done.returncode == 0 and output.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done


def without_timings(result: dict) -> dict:
    """MCP-Bench's result file, its wall-clock fields left out."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if "time" not in k}
        return value

    return strip(result)


def test_mcpbench_runner_records_then_replays_offline(tmp_path, built_cache):
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
            "mb",
            "--llm-base-url",
            model.base_url,
            "--log-results",
            "4000",
        ],
        tmp_path / "record.log",
        env=env,
    )
    try:
        connect(record, harness, "mcpbench")
        run_benchmark(python, harness, record, tmp_path / "recorded.json", tmp_path / "cache-record", env)
    finally:
        record.stop()
        model.stop()
    recorded = json.loads((tmp_path / "recorded.json").read_text())
    assert model.kinds.count("judge") == 5 * len(TASKS)  # the judge ran, five shuffled prompts a task

    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    replay = GatewayProcess(
        [
            "--mode",
            "replay",
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "mb",
            "--log-cassette",
            "mb-replay",
            "--log-results",
            "4000",
        ],
        tmp_path / "replay.log",
        env=offline,
    )
    try:
        connect(replay, harness, "mcpbench")
        run_benchmark(
            python,
            harness,
            replay,
            tmp_path / "replayed.json",
            tmp_path / "cache-replay",
            {**offline, "PATH": "/nonexistent"},
        )
    finally:
        replay.stop()
    replayed = json.loads((tmp_path / "replayed.json").read_text())
    assert without_timings(replayed) == without_timings(recorded)
    calls = list(iter_calls(cassettes / "mb-replay"))
    tools = [c for c in calls if c["server"] != "@model"]
    assert {c["outcome"] for c in calls} <= {"hit", "ok", "tool_error"} and len(tools) == 8
    assert {c["endpoint"] for c in tools} == {
        f"/servers/{s}/mcp" for s in ("unit_converter", "math_mcp", "medical_calculator")
    }
    assert {c["run_id"] for c in tools} == {"mcpbench"}  # the run id of the endpoint's query string

    # MCP-Bench's saved averages are what the gateway's call log gives under MCP-Bench's rules, once a task
    # is what the runner made it: one session per server and task (single-server tasks: one session each).
    for log, result in (("mb", "recorded.json"), ("mb-replay", "replayed.json")):
        check = evaluate(cassettes / log, tmp_path / result, "--tasks-by", "session")
        assert check["agrees"] and check["tasks_in_call_log"] == len(TASKS), check
        assert check["fields"]["input_schema_compliance"]["reported"] == pytest.approx((1 + 1 + 0.5) / 3)
    # Counted as one task (the run id), the schema-invalid call weighs 1/8 instead of 1/2 of its task.
    pooled = evaluate(cassettes / "mb", tmp_path / "recorded.json")
    assert not pooled["fields"]["input_schema_compliance"]["agrees"]


def test_mcpbench_runner_two_server_task_is_one_task(tmp_path, built_cache):
    """The runner opens a session per server of the task (and per distraction server): counted by
    `--tasks-by session`, the task is one task over both servers, with the runner's calls per task."""
    if not ARCHIVE.exists():
        pytest.fail(f"no MCP-Bench snapshot at {ARCHIVE} (CI puts the shared folder beside the clone)")
    python = harness_python()
    harness = unpack_harness(tmp_path / "src")
    two_server_task_file(harness, harness / "two_server.json")
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
            "mb2",
            "--llm-base-url",
            model.base_url,
        ],
        tmp_path / "record.log",
        env=env,
    )
    try:
        connect(record, harness, "mcpbench")
        run_benchmark(python, harness, record, tmp_path / "recorded.json", tmp_path / "cache", env, "two_server.json")
    finally:
        record.stop()
        model.stop()
    tools = [c for c in iter_calls(cassettes / "mb2") if c["server"] != "@model"]
    assert {c["server"] for c in tools} == {"unit_converter", "math_mcp"} and len(tools) == 3, tools
    assert len({c["session_id"] for c in tools}) == 2  # a session per server
    check = evaluate(cassettes / "mb2", tmp_path / "recorded.json", "--tasks-by", "session")
    assert check["agrees"] and check["tasks_in_call_log"] == 1, check
    assert check["fields"]["avg_tool_calls_per_task"]["reported"] == 3, check
    report = json.loads((tmp_path / "recorded.eval.json").read_text())
    (rules,) = report["mcpbench_rules"].values()
    assert rules["overall"]["avg_servers_used"] == 2 and rules["overall"]["avg_tool_calls_per_task"] == 3, rules[
        "overall"
    ]


def evaluate(cassette: Path, results: Path, *more: str) -> dict:
    out = results.with_suffix(".eval.json")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "eval",
            "--cassette",
            str(cassette),
            "--results",
            str(results),
            "--format",
            "json",
            "-o",
            str(out),
            *more,
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (check,) = json.loads(out.read_text())["mcpbench_summary"][str(results)].values()
    return check
