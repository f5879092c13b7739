"""Issue 53 item 2 through the command line: `mcpgw eval` of a call log of repeats, and `--compare`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcpgw.evaluator.report import render
from tests.evaluator.scenario import write_jsonl
from tests.evaluator.test_names import call

# Three tasks, four repeats each: t1 always calls the right tool, t2 every other time, t3 never.
PATTERN = {"t1": [1, 1, 1, 1], "t2": [1, 0, 1, 0], "t3": [0, 0, 0, 0]}


def write_repeats(tmp_path, name: str, pattern=PATTERN, model: str = "m"):
    calls, answers = [], []
    for task, hits in pattern.items():
        for i, hit in enumerate(hits):
            run_id = f"react/{task}#{i}"  # the repeat scheme: <run>#<i>
            tool = "convert_temperature" if hit else "convert_length"
            calls.append(call(run_id, "unit_converter", tool, seq=len(calls)))
            answers.append({"run_id": run_id, "task_id": task, "model": model, "final_answer": "x"})
    right = {"tool_name": "convert_temperature", "tool_parameters": {"v": 1}}
    truth = tmp_path / "truth.jsonl"
    truth.write_text("".join(json.dumps({"task_id": t, "tool_calls": [right]}) + "\n" for t in pattern))
    return (
        write_jsonl(tmp_path / f"{name}.calls.jsonl", calls),
        write_jsonl(tmp_path / f"{name}.answers.jsonl", answers),
        truth,
    )


def mcpgw_eval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "eval", *args], capture_output=True, text=True, timeout=120
    )


def test_eval_of_a_call_log_of_repeats_reports_spread_pass_k_and_intervals(tmp_path):
    calls, answers, truth = write_repeats(tmp_path, "x")
    done = mcpgw_eval(
        "--calls", str(calls), "--answers", str(answers), "--tasks", str(truth), "--json",
        "--success", "mcpeval.strict.overall_score>=0.5", "--bootstrap", "300", "--ci", "0.9", "--seed", "3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    section = json.loads(done.stdout)["stability"]
    assert (section["ci"], section["bootstrap"], section["seed"]) == (0.9, 300, 3)
    model = section["models"]["m"]
    assert sorted(model["tasks"]) == ["t1", "t2", "t3"]
    t2 = model["tasks"]["t2"]
    assert t2["runs"] == ["react/t2#0", "react/t2#1", "react/t2#2", "react/t2#3"]
    score = t2["metrics"]["mcpeval.strict.overall_score"]
    assert score["values"] == [1.0, 0.0, 1.0, 0.0] and score["mean"] == 0.5
    assert score["sd"] == pytest.approx((1 / 3) ** 0.5)
    strict = t2["outcomes"]["mcpeval.strict.success"]
    assert (strict["successes"], strict["n"], strict["flips"]) == (2, 4, True)
    assert strict["pass^k"] == pytest.approx([0.5, 1 / 6, 0.0, 0.0])
    assert strict["pass@k"] == pytest.approx([0.5, 5 / 6, 1.0, 1.0])
    agg = model["aggregates"]
    assert agg["mcpeval.strict.success rate"]["value"] == pytest.approx(0.5)
    assert agg["mcpeval.strict.success pass^2"]["value"] == pytest.approx((1 + 1 / 6 + 0) / 3)
    assert agg["mcpeval.strict.success pass@4"]["value"] == pytest.approx(2 / 3)
    assert agg["mcpeval.strict.success flip share"]["value"] == pytest.approx(1 / 3)
    rule = agg["mcpeval.strict.overall_score>=0.5 rate"]  # the --success outcome, scored like the others
    assert rule["value"] == pytest.approx(0.5) and rule["low"] <= 0.5 <= rule["high"]
    assert "Repeats of m: aggregates with their intervals" in render(json.loads(done.stdout), "html")

    markdown = mcpgw_eval(
        "--calls", str(calls), "--answers", str(answers), "--tasks", str(truth), "--format", "markdown"
    )
    assert markdown.returncode == 0, markdown.stderr
    assert "## Repeats: m, aggregates over tasks" in markdown.stdout
    assert "●○●○ 2/4, flips" in markdown.stdout


def test_bad_repeat_options_are_one_line_errors(tmp_path):
    calls, answers, truth = write_repeats(tmp_path, "x")
    base = ("--calls", str(calls), "--answers", str(answers), "--tasks", str(truth))
    for extra, said in (
        (("--success", "nonsense"), "METRIC>=X"),
        (("--success", "nope>=1"), "no run has a number 'nope'"),
        (("--ci", "1.5"), "--ci"),
        (("--bootstrap", "0"), "--bootstrap"),
    ):
        done = mcpgw_eval(*base, *extra)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_compare_two_call_logs_of_the_same_tasks(tmp_path):
    x_calls, answers, truth = write_repeats(tmp_path, "x")
    y_calls, _, _ = write_repeats(tmp_path, "y", {t: [1, 1, 1, 1] for t in PATTERN})
    done = mcpgw_eval(
        "--compare", str(x_calls), str(y_calls), "--answers", str(answers), "--tasks", str(truth), "--json",
        "--bootstrap", "300",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    row = report["compare"]["aggregates"]["mcpeval.strict.success rate"]
    assert row["x"] == pytest.approx(0.5) and row["y"] == 1.0 and row["difference"] == pytest.approx(0.5)
    assert (row["y_ahead"], row["x_ahead"], row["tied"]) == (2, 0, 1)
    assert not row["above_noise"]  # three tasks, one of them tied: the interval reaches 0
    assert report["compare"]["test"].startswith("paired bootstrap")
    assert set(report["sides"]) == {str(x_calls), str(y_calls)}
    page = render(report, "html")  # the two sides' intervals side by side, one colour each
    assert "The two sides&#x27; aggregates with their intervals" in page and page.count('<circle cx="') > 20
    text = mcpgw_eval("--compare", str(x_calls), str(y_calls), "--answers", str(answers), "--tasks", str(truth))
    assert text.returncode == 0 and "above the noise" in text.stdout, text.stderr
    missing = mcpgw_eval("--compare", str(x_calls), str(tmp_path / "nowhere"), "--answers", str(answers))
    assert missing.returncode == 2 and "neither a call log" in missing.stderr


def test_noise_of_live_and_frozen_repeats(tmp_path):
    live_calls, answers, truth = write_repeats(tmp_path, "live")
    frozen_calls, _, _ = write_repeats(tmp_path, "frozen", {"t1": [1, 1, 1, 1], "t2": [1, 1, 1, 0], "t3": [0] * 4})
    done = mcpgw_eval(
        "--noise", str(live_calls), str(frozen_calls), "--answers", str(answers), "--tasks", str(truth), "--json",
        "--bootstrap", "200",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["noise"]["metrics"]["mcpeval.strict.success"]
    # live: t2 [1,0,1,0] variance 1/3, others 0; frozen: t2 [1,1,1,0] variance 1/4
    assert row["live_variance"] == pytest.approx(1 / 9) and row["frozen_variance"] == pytest.approx(1 / 12)
    assert row["environment_share"] == pytest.approx(0.25)
    text = mcpgw_eval("--noise", str(live_calls), str(frozen_calls), "--answers", str(answers), "--tasks", str(truth))
    assert text.returncode == 0 and "environment's share" in text.stdout, text.stderr
