"""Issue 53 item 0: the same input gives the same report, byte for byte, whatever the hash seed.

Every byte but the two time stamps (`generated_at`, `elapsed_s`). A call log of repeats (several runs of one model attempting one task, some calling the right tool, some not) was
evaluated in an order that came from iterating a set, and MCPEval matching kept whichever run of a task came last:
two evaluations of one cassette could disagree on a task's success."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.evaluator.scenario import write_jsonl
from tests.evaluator.test_names import call

RIGHT = {"tool_name": "unit_converter__convert_temperature", "tool_parameters": {"v": 1}}


def repeats(tmp_path):
    calls, answers = [], []
    for i in range(12):  # twelve repeats of one task: odd ones call the wrong tool
        run_id = f"react/t1#{i}"
        tool = "convert_temperature" if i % 2 == 0 else "convert_length"
        calls.append(call(run_id, "unit_converter", tool, seq=i))
        answers.append({"run_id": run_id, "task_id": "t1", "model": "m", "final_answer": "x"})
    truth = tmp_path / "truth.jsonl"
    truth.write_text(json.dumps({"task_id": "t1", "tool_calls": [RIGHT]}) + "\n")
    return write_jsonl(tmp_path / "calls.jsonl", calls), write_jsonl(tmp_path / "answers.jsonl", answers), truth


def evaluate(files, seed: str) -> str:
    calls, answers, truth = files
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "eval",
            "--calls",
            str(calls),
            "--answers",
            str(answers),
            "--tasks",
            str(truth),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    del report["generated_at"], report["elapsed_s"]  # when it ran and how long it took: not what it found
    return json.dumps(report, indent=2)


def test_one_call_log_of_repeats_gives_one_report_under_every_hash_seed(tmp_path):
    files = repeats(tmp_path)
    reports = {evaluate(files, seed) for seed in ("0", "1", "2", "3", "4")}
    assert len(reports) == 1, "the report changed with the hash seed"
    (report,) = reports
    assert json.loads(report)["mcpeval_match"], report  # the matching ran (a report with nothing in it proves nothing)
