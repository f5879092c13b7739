"""A record run resumed after a failed task: the rerun is a new attempt in a lane of its own
(`<task>~2`), replay follows that attempt, and the failed one never leaks into the replay.

Real parts: MCP-Bench's Unit Converter tasks, the Unit Converter server started with uvx as
the lock says, the `openai` client against a scripted model over HTTP. The first recording's
model answers one task's second turn with a 500 (no retries: the task fails after one tool
call); the model is fixed and the run resumed; then the run is replayed offline (PATH
stripped, no model): the same answers file, byte for byte."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from mcpgw.cli import main
from mcpgw.evaluator.cli import _from_run
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT
from tests.llm.scripted_model import ScriptedModel
from tests.runs.scripts import PLANS, tc_steps
from tests.runs.test_end_to_end import single_server_tasks

pytestmark = pytest.mark.real

TASKS = ("unit_converter_000", "unit_converter_001")
FLAKY = "unit_converter_001"


def script(failing: bool) -> dict:
    out = {}
    for marker, (task_id, rounds) in PLANS.items():
        if task_id in TASKS:
            steps = tc_steps(marker, rounds)
            if failing and task_id == FLAKY:
                steps = [steps[0], {"status": 500}]  # one tool call, then the endpoint fails
            out[("tc", marker)] = steps
    return out


def run(tasks, cassettes, answers, *more: str, env=None) -> subprocess.CompletedProcess:
    ids = [arg for task_id in TASKS for arg in ("--task-id", task_id)]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "run",
            str(tasks),
            "--model",
            "scripted-1",
            *ids,
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "rec",
            "--answers",
            str(answers),
            "--model-retries",
            "0",
            "--max-rounds",
            "6",
            *more,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def records(cassette) -> list[dict]:
    return list(iter_calls(cassette))


def test_a_resumed_task_records_a_new_attempt_and_replay_follows_it(tmp_path):
    tasks = single_server_tasks(tmp_path)
    cassettes, answers = tmp_path / "cassettes", tmp_path / "answers.jsonl"
    record = ("--mode", "record", "--config", str(ROOT / "servers.lock.yaml"), "--servers", "unit_converter")
    with ScriptedModel(script(failing=True)) as model:
        first = run(tasks, cassettes, answers, *record, "--llm-base-url", model.base_url)
    assert first.returncode == 1, first.stderr
    assert f"task {FLAKY} (run {FLAKY}): model_error" in first.stderr
    with ScriptedModel(script(failing=False)) as model:
        resumed = run(tasks, cassettes, answers, *record, "--llm-base-url", model.base_url)
        asked = [s["body"] for s in model.seen]
    assert resumed.returncode == 0, resumed.stderr
    assert "(1 already done)" in resumed.stderr and len(asked) == 2  # only the failed task ran again
    final = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [(a["run_id"], a["attempt"], a["status"]) for a in final] == [
        ("unit_converter_000", 1, "ok"),
        (f"{FLAKY}~2", 2, "ok"),
    ]

    log = records(cassettes / "rec")
    model_log = [(r["run_id"], r["status"], r["outcome"]) for r in log if r["server"] == "@model"]
    assert (FLAKY, 500, "recorded") in model_log and (f"{FLAKY}~2", 200, "recorded") in model_log
    tools = [r["run_id"] for r in log if r["server"] != "@model"]
    assert tools.count(FLAKY) == 1 and tools.count(f"{FLAKY}~2") == 1  # each attempt's call in its own lane
    # The failed attempt's first request was the rerun's too: the same key, answered in two lanes.
    firsts: dict[str, str] = {}
    for r in log:
        if r["server"] == "@model":
            firsts.setdefault(r["run_id"], r["cassette_key"])
    assert firsts[FLAKY] == firsts[f"{FLAKY}~2"]
    # eval --run scores the final attempts only.
    scored, _ = _from_run(argparse.Namespace(run=str(cassettes / "rec"), tasks=[]))
    assert sorted(scored) == ["unit_converter_000", f"{FLAKY}~2"]

    # Replay the whole run offline: no model, no PATH (no uvx), no server process.
    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    replayed_answers = tmp_path / "replayed.jsonl"
    replay = run(tasks, cassettes, replayed_answers, "--mode", "replay", "--log-cassette", "replayed", env=offline)
    assert replay.returncode == 0, replay.stderr
    assert replayed_answers.read_bytes() == answers.read_bytes()
    replayed = records(cassettes / "replayed")
    assert {r["run_id"] for r in replayed} == {"unit_converter_000", f"{FLAKY}~2"}
    assert {r["outcome"] for r in replayed if r["server"] == "@model"} == {"hit"}
    assert 500 not in {r["status"] for r in replayed if r["server"] == "@model"}

    # A model record in the call log changes no score.
    assert_same_scores_without_model_records(tasks, cassettes, answers, tmp_path)


def assert_same_scores_without_model_records(tasks, cassettes, answers, tmp_path) -> None:
    exported = tmp_path / "calls.jsonl"
    assert main(["calls", "export", "rec", "--cassettes-dir", str(cassettes), "-o", str(exported)]) == 0
    lines = exported.read_text().splitlines()
    tools_only = tmp_path / "tool-calls.jsonl"
    tools_only.write_text("".join(line + "\n" for line in lines if json.loads(line)["server"] != "@model"))
    assert len(tools_only.read_text().splitlines()) < len(lines)
    reports = []
    for calls in (exported, tools_only):
        out = tmp_path / f"{calls.stem}.report.json"
        assert (
            main(
                [
                    "eval",
                    "--calls",
                    str(calls),
                    "--tasks",
                    str(tasks),
                    "--answers",
                    str(answers),
                    "--format",
                    "json",
                    "-o",
                    str(out),
                ]
            )
            == 0
        )
        report = json.loads(out.read_text())
        reports.append({k: v for k, v in report.items() if k not in ("inputs", "generated_at", "sources", "elapsed_s")})
    assert reports[0] == reports[1]
    assert reports[0]["mcpbench_rules"]  # something was scored
