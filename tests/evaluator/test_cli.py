"""End to end through the CLI: files on disk, a real loopback judge, every output format."""

import argparse
import json
import sys

import pytest

from mcpgw import cli as mcpgw_cli
from mcpgw.commands import evaluate
from mcpgw.evaluator import cli
from tests.evaluator import scenario
from tests.evaluator.conftest import call


def eval_args(files, fake, key_env, store, *extra):
    return [
        "eval",
        "--calls",
        str(files["calls"]),
        "--tasks",
        str(files["mcpbench"]),
        "--tasks",
        str(files["mcpeval"]),
        "--tasks",
        str(files["agentbench"]),
        "--answers",
        str(files["answers"]),
        "--labels",
        str(files["labels"]),
        "--tools",
        str(files["tools"]),
        "--judge-model",
        "judge-x",
        "--judge-base-url",
        fake.url,
        "--judge-key-env",
        key_env,
        "--judge-store",
        str(store),
        "--judge-timeout",
        "10",
        *extra,
    ]


@pytest.fixture
def evaluated(tmp_path, fake_openai, judge_key):
    files = scenario.build(tmp_path)
    fake_openai.script = scenario.judge_script
    out = tmp_path / "report.json"
    store = tmp_path / "judge-store"
    code = mcpgw_cli.main(eval_args(files, fake_openai, judge_key, store, "--format", "json", "-o", str(out)))
    assert code == 0
    return files, json.loads(out.read_text()), store


def test_rule_metrics_per_model_and_file(evaluated):
    _, report, _ = evaluated
    a = report["mcpbench_rules"]["model-a"]["overall"]
    assert a["valid_tool_name_rate"] == pytest.approx(2 / 3) and a["input_schema_compliance"] == pytest.approx(0.5)
    assert a["tool_call_success_rate"] == pytest.approx(1 / 3) and a["valid_call_failure_rate"] == pytest.approx(0.5)
    assert a["tasks"] == 2 and report["mcpbench_rules"]["model-a"]["tasks"]["a-mb2"]["valid_tool_name_rate"] is None
    b = report["mcpbench_rules"]["model-b"]["overall"]
    assert (b["valid_tool_name_rate"], b["input_schema_compliance"], b["tool_call_success_rate"]) == (1.0, 1.0, 0.5)


def test_matching_from_the_call_log(evaluated):
    _, report, _ = evaluated
    (per_model,) = report["mcpeval_match"].values()
    assert per_model["model-a"]["summary"]["strict"]["success_rate"] == 1.0
    b = per_model["model-b"]["tasks"]["e1"]
    assert b["strict"]["overall_score"] == pytest.approx(0.6) and b["flexible"]["overall_score"] == pytest.approx(0.8)
    assert b["param_mismatches"] == {"forecast": {"city": ["Oslo", "Bergen"]}}


def test_judged_pass_rates_rubric_aspects_and_agreement(evaluated, fake_openai):
    _, report, _ = evaluated
    a, b = report["agentbench"]["model-a"]["summary"], report["agentbench"]["model-b"]["summary"]
    assert a["pass_rate"] == 1.0 and b["pass_rate"] == 0.5
    assert b["categories"]["single-server/single-call"]["pass_rate"] == 0.0
    assert b["categories"]["multi-server/parallel-call"]["pass_rate"] == 1.0
    judged = report["mcpbench_judge"]["model-a"]
    assert judged["mean"]["overall"] == pytest.approx(0.7) and judged["mean"]["judged_runs"] == 2
    assert report["mcpeval_judge"]["model-b"]["mean"]["completion"] == pytest.approx(0.75)
    agreement = report["agreement"]
    assert agreement["percentage_agreement"] == pytest.approx(2 / 3) and agreement["cohens_kappa"] == pytest.approx(0.4)
    assert agreement["fleiss_kappa"] == pytest.approx(0.0) and agreement["all_raters_agreement"] == pytest.approx(1 / 3)
    assert report["judge"]["live_calls"] == 4 + 3 * 5 + 2 * 2 == len(fake_openai.requests)


def test_audit_in_the_report(evaluated):
    _, report, _ = evaluated
    rows = {(t["server"], t["tool"]): t for t in report["audit"]["tools"]}
    forecast = rows[("weather", "forecast")]
    assert (forecast["calls"], forecast["invalid"], forecast["near_misses"], forecast["timeouts"]) == (7, 1, 1, 1)
    assert rows[("maps", "geocode")]["calls"] == 0  # from the catalog
    assert report["servers"]["weather"]["calls"] == 7


def test_offline_rescoring_is_identical_and_free(evaluated, fake_openai, judge_key, tmp_path):
    files, first, store = evaluated
    before = len(fake_openai.requests)
    out = tmp_path / "again.json"
    code = mcpgw_cli.main(
        eval_args(files, fake_openai, "UNSET_KEY_FOR_OFFLINE", store, "--offline", "--format", "json", "-o", str(out))
    )
    again = json.loads(out.read_text())
    assert code == 0 and len(fake_openai.requests) == before
    assert again["judge"]["live_calls"] == 0 and again["judge"]["replayed"] == before
    for key in ("agentbench", "mcpbench_judge", "mcpeval_judge", "agreement", "mcpbench_rules"):
        assert again[key] == first[key]


def test_offline_miss_is_reported(evaluated, fake_openai, tmp_path, capsys):
    files, _, store = evaluated
    out = tmp_path / "more.json"
    code = mcpgw_cli.main(
        eval_args(
            files, fake_openai, "UNSET", store, "--offline", "--judge-runs", "6", "--format", "json", "-o", str(out)
        )
    )
    report = json.loads(out.read_text())
    assert code == 1 and "had no recording" in capsys.readouterr().err
    assert len(report["judge"]["misses"]) == 3  # the 6th rubric run of each of the 3 MCP-Bench runs
    assert all("rubric run 6" in miss for miss in report["judge"]["misses"])


def test_unreachable_judge_stops_with_a_clear_error(tmp_path, closed_port, judge_key, capsys):
    files = scenario.build(tmp_path)
    args = [
        "eval",
        "--calls",
        str(files["calls"]),
        "--tasks",
        str(files["agentbench"]),
        "--answers",
        str(files["answers"]),
        "--judge-model",
        "j",
        "--judge-base-url",
        f"http://127.0.0.1:{closed_port}/v1",
        "--judge-key-env",
        judge_key,
        "--judge-store",
        str(tmp_path / "s"),
        "--judge-retries",
        "1",
    ]
    assert mcpgw_cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpgw: cannot reach judge endpoint") and "Traceback" not in err


@pytest.mark.parametrize(
    "fmt, marker",
    [("markdown", "## MCP-Bench rule-based metrics"), ("html", "<svg"), ("terminal", "Per-tool call validity")],
)
def test_other_formats(evaluated, fake_openai, judge_key, tmp_path, fmt, marker):
    files, _, store = evaluated
    out = tmp_path / f"report.{fmt}"
    assert mcpgw_cli.main(eval_args(files, fake_openai, judge_key, store, "--format", fmt, "-o", str(out))) == 0
    text = out.read_text()
    assert marker in text and "model-b" in text


def test_bad_inputs_exit_2_with_file_line_field(tmp_path, capsys):
    files = scenario.build(tmp_path)
    files["answers"].write_text('{"run_id": "r1", "final_answer": "ok"}\n{"run_id": "r2"}\n')
    code = mcpgw_cli.main(["eval", "--calls", str(files["calls"]), "--answers", str(files["answers"])])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"mcpgw: {files['answers']}:2: field 'final_answer': missing "
        "(expected 'final_answer' or 'answer' or 'final_response' or 'response')"
    )
    assert mcpgw_cli.main(["eval"]) == 2 and "nothing to evaluate" in capsys.readouterr().err
    assert mcpgw_cli.main(["eval", "--calls", str(files["calls"]), "--weights", "name=x"]) == 2


def test_audit_command(tmp_path, capsys):
    files = scenario.build(tmp_path)
    out = tmp_path / "audit.json"
    code = mcpgw_cli.main(
        [
            "audit",
            "--calls",
            str(files["calls"]),
            "--format",
            "json",
            "-o",
            str(out),
            "--sort",
            "calls",
            "--fail-under",
            "validity=0.9",
        ]
    )
    report = json.loads(out.read_text())
    assert code == 1 and "weather/forecast: validity 0.857 < 0.9" in capsys.readouterr().err
    assert [t["calls"] for t in report["tools"]] == sorted((t["calls"] for t in report["tools"]), reverse=True)
    assert report["threshold_failures"]
    assert (
        mcpgw_cli.main(
            ["audit", "--calls", str(files["calls"]), "--fail-under", "validity=0.5", "-o", str(tmp_path / "a.txt")]
        )
        == 0
    )
    assert "weather" in (tmp_path / "a.txt").read_text()
    assert mcpgw_cli.main(["audit", "--calls", str(files["calls"]), "--fail-under", "speed=1"]) == 2
    assert "unknown threshold 'speed'" in capsys.readouterr().err


def test_registration_wires_eval_and_audit_to_the_evaluator():
    parser = argparse.ArgumentParser(prog="mcpgw")
    sub = parser.add_subparsers(dest="command")
    evaluate.register(sub)
    args = parser.parse_args(["audit", "--calls", "x.jsonl", "--sort", "p99_ms", "--json"])
    assert args.func.resolve() is cli.audit_command and args.sort == "p99_ms" and args.format == "json"
    args = parser.parse_args(
        ["eval", "--tasks", "a", "--tasks", "b", "--offline", "--judge-prompt", "agentbench=p.txt"]
    )
    assert args.func.resolve() is cli.eval_command and args.tasks == ["a", "b"] and args.offline


def test_a_broken_first_party_import_fails_loudly(tmp_path, monkeypatch):
    """Issue 42: the recorder is part of mcpgw, not optional; an import of it that fails is a broken install, and
    says so, rather than a source or a report section quietly missing (the drift section used to vanish)."""
    monkeypatch.setitem(sys.modules, "mcpgw.recorder.calllog", None)  # the import fails
    with pytest.raises(ImportError):
        mcpgw_cli.main(["audit", "--cassette", str(tmp_path)])


def test_cassette_through_the_recorder(tmp_path, capsys):
    import mcpgw.cassette.store as store_mod
    import mcpgw.recorder.calllog as calllog  # required dependencies: a broken install fails here, it does not skip

    store = store_mod.CassetteStore(tmp_path / "cassette")
    log = calllog.CallLog(store)
    for i in range(3):
        log.append(call("run-1", outcome="ok" if i else "timeout"))
    store.close()
    out = tmp_path / "audit.json"
    assert mcpgw_cli.main(["audit", "--cassette", str(tmp_path / "cassette"), "--format", "json", "-o", str(out)]) == 0
    (row,) = json.loads(out.read_text())["tools"]
    assert row["calls"] == 3 and row["timeouts"] == 1


def test_predictions_without_a_call_log(tmp_path, fake_openai, judge_key):
    files = scenario.build(tmp_path)
    predictions = scenario.write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {
                "task_id": "e1",
                "model": "m",
                "final_response": "Rain",
                "tool_calls": [{"tool_name": "forecast", "tool_parameters": {"city": " OSLO"}}],
            },
            {"task_id": "q1", "model": "m", "final_response": "DATA: 12C", "tool_calls": []},
        ],
    )
    fake_openai.script = scenario.judge_script
    out = tmp_path / "r.json"
    code = mcpgw_cli.main(
        [
            "eval",
            "--tasks",
            str(files["mcpeval"]),
            "--tasks",
            str(files["agentbench"]),
            "--predictions",
            str(predictions),
            "--judge-model",
            "j",
            "--judge-timeout",
            "10",
            "--judge-base-url",
            fake_openai.url,
            "--judge-key-env",
            judge_key,
            "--judge-store",
            str(tmp_path / "store.jsonl"),
            "--format",
            "json",
            "-o",
            str(out),
        ]
    )
    report = json.loads(out.read_text())
    assert code == 0 and "audit" not in report
    (per_model,) = report["mcpeval_match"].values()
    assert per_model["m"]["summary"]["strict"]["success_rate"] == 1.0  # " OSLO" normalises to "oslo"
    assert report["agentbench"]["m"]["summary"]["pass_rate"] == 1.0  # the final response was judged
    assert (tmp_path / "store.jsonl").read_text().count("\n") == 1 + 2  # 1 pass/fail + 2 MCPEval judgements


def test_judge_prompt_files(tmp_path, fake_openai, judge_key):
    files = scenario.build(tmp_path)
    prompt = tmp_path / "original.txt"
    prompt.write_text("ORIGINAL\nQ={query}\nREF={reference_answer}\nA={answer}\nSay PASS or FAIL.")
    fake_openai.script = [{"content": "PASS"}]
    args = [
        "eval",
        "--tasks",
        str(files["agentbench"]),
        "--answers",
        str(files["answers"]),
        "--judge-model",
        "j",
        "--judge-timeout",
        "10",
        "--judge-base-url",
        fake_openai.url,
        "--judge-key-env",
        judge_key,
        "--judge-store",
        str(tmp_path / "s"),
        "--format",
        "json",
        "-o",
        str(tmp_path / "r.json"),
    ]
    assert mcpgw_cli.main(args + ["--judge-prompt", str(prompt)]) == 0
    assert all(p.startswith("ORIGINAL\nQ=") for p in fake_openai.prompts()) and len(fake_openai.prompts()) == 4
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["judge"]["prompts"] == {"agentbench": str(prompt)}  # only the judge whose fields it uses
    assert mcpgw_cli.main(args + ["--judge-prompt", f"mcpbench={prompt}"]) == 2  # none of the rubric's placeholders


def test_audit_html_and_markdown(tmp_path):
    files = scenario.build(tmp_path)
    for fmt, marker in (("html", "<svg"), ("markdown", "| weather | forecast |")):
        out = tmp_path / f"audit.{fmt}"
        assert (
            mcpgw_cli.main(
                [
                    "audit",
                    "--calls",
                    str(files["calls"]),
                    "--tools",
                    str(files["tools"]),
                    "--format",
                    fmt,
                    "-o",
                    str(out),
                ]
            )
            == 0
        )
        text = out.read_text()
        assert marker in text and "geocode" in text  # catalog tools are listed even without calls
