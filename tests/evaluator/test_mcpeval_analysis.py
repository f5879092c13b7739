"""Issue 44.5: MCPEval's analyzer sections (parameter_mismatches, tool_usage, success_patterns) in eval's
report, and its --param-threshold / --order-threshold. Expected values worked out with the analyzer's rules
(MCPEval src/mcpeval/cli/analyzer/tool_analysis.py) over mcpeval_files' three tasks:
GT t1 [get_weather], t2 [search, fetch], t3 [a, b]; predicted t1 [get_weather], t2 [], t3 [a (x 11), b].
Strict: t1 succeeds, t2 and t3 fail (t3's a.x 10 vs 11); flexible: t1 and t3 succeed (11 within 20% of 10)."""

from __future__ import annotations

import json

from mcpgw import cli
from tests.evaluator.test_results_rescore import mcpeval_files, run_eval


def test_the_analyzers_sections_equal_its_rules(tmp_path):
    gt, pred = mcpeval_files(tmp_path)
    code, report = run_eval(tmp_path, "--tasks", str(gt), "--results", str(pred))
    assert code == 0
    result = report["mcpeval_match"][str(gt)]["gpt-y"]
    assert result["parameter_mismatches"] == {"a": {"x": 1}}
    assert result["tool_usage"] == {
        "ground_truth_tools": {"get_weather": 1, "search": 1, "fetch": 1, "a": 1, "b": 1},
        "prediction_tools": {"get_weather": 1, "a": 1, "b": 1},
        "missing_tools": {"search": 1, "fetch": 1},
        "extra_tools": {},
    }
    patterns = result["success_patterns"]
    assert patterns["by_tool_count"] == {  # JSON keys: the analyzer's file has them as strings too
        "strict": {"success": {"1": 1, "2": 0}, "failure": {"1": 0, "2": 2}},
        "flexible": {"success": {"1": 1, "2": 1}, "failure": {"1": 0, "2": 1}},
    }
    assert patterns["by_tool_combination"] == {
        "strict": {"success": {"1x get_weather": 1}, "failure": {"1x search, 1x fetch": 1, "1x a, 1x b": 1}},
        "flexible": {"success": {"1x get_weather": 1, "1x a, 1x b": 1}, "failure": {"1x search, 1x fetch": 1}},
    }
    assert patterns["by_tool"] == {
        "get_weather": {"success_rate": 1.0, "total_tasks": 1, "successful_tasks": 1},
        **{t: {"success_rate": 0.0, "total_tasks": 1, "successful_tasks": 0} for t in ("search", "fetch", "a", "b")},
    }


def _one_task(tmp_path):
    # Flexible: a.q "foo" vs "bar" differ -> half credit: parameter score 0.5, under MCPEval's default 0.6.
    gt = tmp_path / "gt.jsonl"
    gt.write_text(json.dumps({"id": "t", "tool_calls": [{"tool_name": "a", "tool_parameters": {"q": "foo"}}]}) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(
        json.dumps(
            {
                "task_id": "t",
                "model": "m",
                "final_response": "x",
                "success": True,
                "tool_calls": [{"tool_name": "a", "tool_parameters": {"q": "bar"}}],
            }
        )
        + "\n"
    )
    return gt, pred


def test_the_thresholds_are_options(tmp_path):
    gt, pred = _one_task(tmp_path)
    _, default = run_eval(tmp_path, "--tasks", str(gt), "--results", str(pred))
    assert default["mcpeval_match"][str(gt)]["m"]["tasks"]["t"]["flexible"]["success"] is False
    code, lowered = run_eval(tmp_path, "--tasks", str(gt), "--results", str(pred), "--param-threshold", "0.5")
    row = lowered["mcpeval_match"][str(gt)]["m"]["tasks"]["t"]
    assert code == 0 and row["flexible"]["success"] is True
    assert row["thresholds"] == {"flexible_param": 0.5, "flexible_order": 0.5}
    assert cli.main(["eval", "--tasks", str(gt), "--results", str(pred), "--order-threshold", "1.5"]) == 2
