"""Issue 44.4: MCPEval's evaluator runs every task in one MCP session, so `mcpgw eval --cassette <its run>
--tasks <its task file>` found no run per task and gave an empty MCPEval section without a word. Now it says
why, and with the results file its evaluator wrote, checks that file's calls against the call log."""

from __future__ import annotations

from tests.evaluator.conftest import call
from tests.evaluator.scenario import write_jsonl
from tests.evaluator.test_results_rescore import mcpeval_files, run_eval

# What MCPEval's evaluator sent through the gateway for mcpeval_files' predictions: one session, one run.
SESSION = [
    call(
        "mcpeval",
        seq=0,
        server="weather",
        tool="get_weather",
        exposed_name="get_weather",
        arguments={"city": " oslo", "units": "METRIC"},
    ),
    call("mcpeval", seq=1, server="pairs", tool="a", exposed_name="a", arguments={"x": 11}),
    call("mcpeval", seq=2, server="pairs", tool="b", exposed_name="b", arguments={}),
]


def test_a_call_log_alone_says_why_the_mcpeval_section_is_empty(tmp_path):
    gt, _ = mcpeval_files(tmp_path)
    calls = write_jsonl(tmp_path / "calls.jsonl", SESSION)
    code, report = run_eval(tmp_path, "--calls", str(calls), "--tasks", str(gt))
    assert code == 0 and report["mcpeval_match"] == {str(gt): {}}
    (said,) = [w for w in report["warnings"] if "MCPEval section is empty" in w]
    assert "1 run(s) ('mcpeval')" in said and "3 task ids" in said and "one MCP session" in said and "--results" in said


def test_the_results_file_is_checked_against_the_call_log(tmp_path):
    gt, pred = mcpeval_files(tmp_path)
    calls = write_jsonl(tmp_path / "calls.jsonl", SESSION)
    code, report = run_eval(tmp_path, "--calls", str(calls), "--tasks", str(gt), "--results", str(pred))
    assert code == 0 and report["mcpeval_match"][str(gt)]["gpt-y"]["summary"]["total_tasks"] == 3
    check = report["mcpeval_crosscheck"]
    assert check["agrees"] and check["summary"] == "3 calls in the results file(s), 3 logged"
    assert check["files"] == {str(pred): 3}
    assert not [w for w in report["warnings"] if "MCPEval" in w]


def test_a_results_file_that_reports_other_calls_is_warned_about(tmp_path):
    gt, pred = mcpeval_files(tmp_path)
    calls = write_jsonl(tmp_path / "calls.jsonl", SESSION[:2] + [call("mcpeval", seq=2, tool="c", exposed_name="c")])
    code, report = run_eval(tmp_path, "--calls", str(calls), "--tasks", str(gt), "--results", str(pred))
    check = report["mcpeval_crosscheck"]
    assert not check["agrees"] and check["only_in_files"] == {"b": 1} and check["only_logged"] == {"c": 1}
    assert any(w.startswith("MCPEval's results and the call log differ: 3 calls") for w in report["warnings"])
