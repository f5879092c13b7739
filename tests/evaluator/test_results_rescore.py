"""`mcpgw eval --results`: a benchmark harness's own result files re-scored through the CLI.

The files are hand-made in the shapes the harnesses write (MCP-Bench's runner task results with
the executor's execution_results and available_tools; MCPEval's `evaluate` JSONL and task file);
every expected number is worked out in the comments with the benchmark's own formula.
"""

import json
import subprocess
import sys

import pytest

from mcpgw import cli

PARKS_SCHEMA = {
    "type": "object",
    "properties": {"stateCode": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["stateCode"],
}
TOOLS = {
    "National Parks:findParks": {
        "name": "findParks",
        "server": "National Parks",
        "description": "Find parks",
        "input_schema": PARKS_SCHEMA,
    },
    "Time MCP:get_current_time": {
        "name": "get_current_time",
        "server": "Time MCP",
        "description": "Now",
        "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
    },
    "Weather Data:forecast": None,  # a broken catalog entry: the name is valid, every call non-compliant
}


def ex(tool, params, success=True, server=None):
    record = {"tool": tool, "parameters": params, "round_num": 1, "success": success}
    if server:
        record["server"] = server
    record["result" if success else "error"] = "..."
    return record


def evaluation(compliance, valid, success, failure, planning, servers):
    return {
        "task_fulfillment": 5.0,
        "grounding": 5.0,
        "input_schema_compliance": compliance,
        "valid_tool_name_rate": valid,
        "execution_success_rate": success,
        "valid_call_failure_rate": failure,
        "planning_json_compliance": planning,
        "server_utilization_metrics": {
            "server_count": len(servers),
            "cross_server_coordination": len(servers) > 1,
            "server_distribution": servers,
        },
    }


def mcpbench_results():
    # Task p1 (5 calls):
    #   findParks {"stateCode": "CA"}           valid, compliant, ok        (National Parks)
    #   findParks {"stateCode": "CA", limit "3"} valid, not compliant (limit is a string), failed
    #   get_current_time null                    valid, not compliant (type object rejects null), ok   (Time MCP)
    #   Weather Data:forecast {}                 valid (in available_tools), not compliant (null entry), failed
    #   findPark {}                              unknown name, failed, no server
    # valid 4/5 = 0.8; compliance 1/4 = 0.25; success 2/5 = 0.4; valid failures 2/4 = 0.5;
    # servers {National Parks: 2, Time MCP: 1, Weather Data: 1} -> 3, cross-server.
    p1 = [
        ex("National Parks:findParks", {"stateCode": "CA"}, server="National Parks"),
        ex("National Parks:findParks", {"stateCode": "CA", "limit": "3"}, False, server="National Parks"),
        ex("Time MCP:get_current_time", None, server="Time MCP"),
        ex("Weather Data:forecast", {}, False, server="Weather Data"),
        ex("National Parks:findPark", {}, False),
    ]
    # Task p2: no calls at all (the agent answered from memory): rates None, 0 servers.
    # Task p3: the run failed (status "failed", no execution results): out of every average.
    return {
        "gpt-x": [
            {
                "task_id": "p1",
                "server_name": "National Parks",
                "model_name": "gpt-x",
                "status": "completed",
                "execution_results": p1,
                "available_tools": TOOLS,
                "total_rounds": 3,
                "planning_json_compliance": 0.75,
                "evaluation": evaluation(
                    0.25, 0.8, 0.4, 0.5, 0.75, {"National Parks": 2, "Time MCP": 1, "Weather Data": 1}
                ),
            },
            {
                "task_id": "p2",
                "server_name": "National Parks",
                "model_name": "gpt-x",
                "status": "completed",
                "execution_results": [],
                "available_tools": TOOLS,
                "total_rounds": 0,
                "evaluation": {
                    **evaluation(None, None, None, None, 1.0, {}),
                    "server_utilization_metrics": {
                        "server_count": 0,
                        "cross_server_coordination": False,
                        "server_distribution": {},
                    },
                },
            },
            {
                "task_id": "p3",
                "server_name": "National Parks",
                "model_name": "gpt-x",
                "status": "failed",
                "error": "Task timed out after 3 attempts",
                "execution_time": 0,
            },
        ]
    }


def run_eval(tmp_path, *args):
    out = tmp_path / "report.json"
    code = cli.main(["eval", *args, "--json", "-o", str(out)])
    return code, (json.loads(out.read_text()) if out.exists() else None)


def test_mcpbench_results_file_is_rescored_like_mcpbench(tmp_path):
    path = tmp_path / "mcpbench_results.json"
    path.write_text(json.dumps(mcpbench_results()))
    code, report = run_eval(tmp_path, "--results", str(path))
    assert code == 0
    rules = report["mcpbench_rules"]["gpt-x"]
    assert rules["disagreements"] == []  # every saved per-task value is reproduced
    p1 = rules["tasks"]["p1"]
    assert (p1["valid_tool_name_rate"], p1["input_schema_compliance"]) == (0.8, 0.25)
    assert (p1["execution_success_rate"], p1["valid_call_failure_rate"]) == (0.4, 0.5)
    per_file = rules["files"][str(path)]
    # Averages over the completed tasks p1, p2 (p3 failed), skipping p2's None:
    assert per_file["input_schema_compliance"] == 0.25 and per_file["valid_tool_name_rate"] == 0.8
    assert per_file["tool_call_success_rate"] == 0.4 and per_file["valid_call_failure_rate"] == 0.5
    assert per_file["avg_tool_calls_per_task"] == 2.5  # (5 + 0) / 2
    assert per_file["avg_servers_used"] == 1.5  # (3 + 0) / 2
    assert per_file["cross_server_coordination_rate"] == 0.5  # 1 of 2
    assert per_file["planning_json_compliance"] == 0.875  # (0.75 + 1.0 default) / 2
    assert per_file["avg_total_rounds"] == 1.5  # (3 + 0) / 2
    assert per_file["task_success_rate"] == pytest.approx(2 / 3)
    assert report["inputs"]["results"] == {str(path): "mcpbench"}


def test_a_wrong_saved_value_is_reported(tmp_path):
    data = mcpbench_results()
    data["gpt-x"][0]["evaluation"]["input_schema_compliance"] = 1.0  # not what the formula gives (0.25)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    code, report = run_eval(tmp_path, "--results", str(path))
    assert code == 0
    assert report["mcpbench_rules"]["gpt-x"]["disagreements"] == [
        {"task": "p1", "metric": "input_schema_compliance", "ours": 0.25, "reported": 1.0}
    ]
    assert any("differ from the evaluation MCP-Bench saved" in w for w in report["warnings"])


def test_only_zero_call_tasks_are_accepted(tmp_path):
    # Every task made no calls: accepted and scored (rates None -> safe_avg 0.0, calls/task 0.0).
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps(
            {
                "task_id": "z",
                "model_name": "m",
                "status": "completed",
                "execution_results": [],
                "available_tools": TOOLS,
            }
        )
        + "\n"
    )
    code, report = run_eval(tmp_path, "--results", str(path))
    assert code == 0
    per_file = report["mcpbench_rules"]["m"]["files"][str(path)]
    assert per_file["avg_tool_calls_per_task"] == 0.0 and per_file["tasks_with_calls"] == 0
    assert report["mcpbench_rules"]["m"]["tasks"]["z"]["valid_tool_name_rate"] is None


def test_empty_call_log_with_answers_scores_zero_call_runs(tmp_path):
    calls = tmp_path / "calls.jsonl"
    calls.write_text("")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps(
            {
                "run_id": "r1",
                "model": "m",
                "final_answer": "no tools needed",
                "rounds": 1,
                "planning_json_compliance": 1.0,
            }
        )
        + "\n"
    )
    code, report = run_eval(tmp_path, "--calls", str(calls), "--answers", str(answers))
    assert code == 0
    agg = report["mcpbench_rules"]["m"]["overall"]
    assert agg["tasks"] == 1 and agg["avg_tool_calls_per_task"] == 0.0 and agg["planning_json_compliance"] == 1.0


def test_catalog_with_a_non_object_schema_is_not_refused(tmp_path):
    # Through the CLI a --tools catalog whose tool has a list as inputSchema is read; calls to that tool are
    # non-compliant, the other calls are scored normally. Calls: ok to find (compliant), one to odd:
    # compliance 1/2 = 0.5 (both rechecked: the log has no verdicts).
    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps(
            [
                {"server": "s", "name": "find", "inputSchema": {"type": "object"}},
                {"server": "s", "name": "odd", "inputSchema": ["not", "a", "schema"]},
            ]
        )
    )
    calls = tmp_path / "calls.jsonl"
    base = {"run_id": "r", "outcome": "ok", "known_tool": True, "server": "s", "arguments": {}, "validation": None}
    calls.write_text(
        json.dumps({**base, "tool": "find", "exposed_name": "s__find"})
        + "\n"
        + json.dumps({**base, "tool": "odd", "exposed_name": "s__odd"})
        + "\n"
    )
    code, report = run_eval(tmp_path, "--calls", str(calls), "--tools", str(tools))
    assert code == 0
    assert report["mcpbench_rules"]["unknown"]["tasks"]["r"]["input_schema_compliance"] == 0.5
    assert any("unusable schema" in w for w in report["warnings"])


def mcpeval_files(tmp_path):
    # Ground truth in MCPEval's task-file shape, predictions as `mcp-eval evaluate --output` writes them.
    truth = [
        {
            "id": "t1",
            "name": "weather",
            "description": "Oslo weather",
            "goal": "forecast",
            "tools": [{"name": "get_weather", "inputSchema": {}}],
            "tool_calls": [{"tool_name": "get_weather", "tool_parameters": {"city": "Oslo", "units": "metric"}}],
        },
        {
            "id": "t2",
            "name": "search",
            "description": "",
            "goal": "",
            "tool_calls": [
                {"tool_name": "search", "tool_parameters": {"q": "cats"}},
                {"tool_name": "fetch", "tool_parameters": {"id": 3}},
            ],
        },
        {
            "id": "t3",
            "name": "pair",
            "description": "",
            "goal": "",
            "tool_calls": [{"tool_name": "a", "tool_parameters": {"x": 10}}, {"tool_name": "b", "tool_parameters": {}}],
        },
    ]
    task = {"id": "", "name": "", "description": "", "goal": ""}
    preds = [
        {
            "task_id": "t1",
            "success": True,
            "final_response": "8C",
            "model": "gpt-y",
            "client_type": "openai",
            "tool_calls": [{"tool_name": "get_weather", "tool_parameters": {"city": " oslo", "units": "METRIC"}}],
            "conversation": [{"role": "user", "content": "weather?"}],
            "task": {**task, "id": "t1"},
        },
        {
            "task_id": "t2",
            "success": False,
            "error": "rate limited",
            "tool_calls": [],
            "model": "gpt-y",
            "final_response": "Error occurred during task execution: rate limited",
            "conversation": [],
            "client_type": "openai",
            "task": {**task, "id": "t2"},
        },
        {
            "task_id": "t3",
            "success": True,
            "final_response": "done",
            "model": "gpt-y",
            "client_type": "openai",
            "tool_calls": [{"tool_name": "a", "tool_parameters": {"x": 11}}, {"tool_name": "b", "tool_parameters": {}}],
            "conversation": [],
            "task": {**task, "id": "t3"},
        },
    ]
    gt = tmp_path / "tasks_verified.jsonl"
    gt.write_text("".join(json.dumps(t) + "\n" for t in truth))
    pred = tmp_path / "gpt-y_evaluation.jsonl"
    pred.write_text("".join(json.dumps(p) + "\n" for p in preds))
    return gt, pred


def test_mcpeval_results_file_is_rescored_like_mcpeval(tmp_path):
    gt, pred = mcpeval_files(tmp_path)
    code, report = run_eval(tmp_path, "--tasks", str(gt), "--results", str(pred))
    assert code == 0
    result = report["mcpeval_match"][str(gt)]["gpt-y"]
    # t1: names 1, params 1 (strings are stripped and lower-cased in both modes), order 1 -> 1.0 both modes.
    # t2: the run errored with no calls: names 0/2, params 0 (no matched position), order 0/2 -> 0.0.
    # t3: names 2/2; strict params: a has x 10 vs 11 -> 0, b has no GT params -> 1: mean 0.5; order 1:
    #     strict 0.4*1 + 0.4*0.5 + 0.2*1 = 0.8. Flexible: 10 vs 11 differ by 1/11 < 0.2 -> a scores 1: 1.0.
    assert [result["tasks"][t]["strict"]["overall_score"] for t in ("t1", "t2", "t3")] == pytest.approx([1, 0, 0.8])
    assert [result["tasks"][t]["flexible"]["overall_score"] for t in ("t1", "t2", "t3")] == pytest.approx([1, 0, 1])
    summary = result["summary_metrics"]  # MCPEval's analysis-file names
    assert summary["total_tasks"] == 3
    assert summary["tasks_with_matching_tools"] == 2  # t1, t3: fewer missing tools than GT calls; t2 misses both
    assert summary["exact_match"]["tasks_with_complete_success"] == 1  # t1 (t3's a param differs)
    assert summary["flexible_match"]["tasks_with_complete_success"] == 2  # t1, t3
    assert summary["exact_match"]["average_overall_score"] == pytest.approx((1 + 0 + 0.8) / 3)
    assert summary["flexible_match"]["average_overall_score"] == pytest.approx(2 / 3)
    assert summary["exact_match"]["average_param_match_score"] == pytest.approx((1 + 0 + 0.5) / 3)
    assert report["inputs"]["results"] == {str(pred): "mcpeval"}


def test_weights_are_scaled_as_mcpeval_analyze_does(tmp_path):
    # name=2,params=1,order=1 sums to 4 -> scaled to 0.5/0.25/0.25 (MCPEval's analyze), not replaced.
    # t3 strict: 0.5*1 + 0.25*0.5 + 0.25*1 = 0.875.
    gt, pred = mcpeval_files(tmp_path)
    code, report = run_eval(
        tmp_path, "--tasks", str(gt), "--results", str(pred), "--weights", "name=2,params=1,order=1"
    )
    assert code == 0
    t3 = report["mcpeval_match"][str(gt)]["gpt-y"]["tasks"]["t3"]
    assert t3["strict"]["overall_score"] == pytest.approx(0.875)
    assert any("scaled" in w for w in report["warnings"])


def test_bad_results_file_is_one_line_error_through_mcpgw(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"input_schema_compliance": 0.9, "tool_call_success_rate": 0.8}))
    proc = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "eval", "--results", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "metrics summary" in lines[0] and "Traceback" not in proc.stderr


def test_two_models_result_files_side_by_side(tmp_path):
    # A second model's evaluation file with the same task ids: each model is matched on its own.
    # gpt-z calls nothing for t1 -> strict overall 0 (names 0, params 0, order 0).
    gt, pred = mcpeval_files(tmp_path)
    other = tmp_path / "gpt-z_evaluation.jsonl"
    other.write_text(json.dumps({"task_id": "t1", "model": "gpt-z", "tool_calls": [], "final_response": ""}) + "\n")
    code, report = run_eval(tmp_path, "--tasks", str(gt), "--results", str(pred), "--results", str(other))
    assert code == 0
    per_model = report["mcpeval_match"][str(gt)]
    assert set(per_model) == {"gpt-y", "gpt-z"}
    assert per_model["gpt-z"]["summary_metrics"]["total_tasks"] == 1
    assert per_model["gpt-z"]["tasks"]["t1"]["strict"]["overall_score"] == 0.0
    assert per_model["gpt-y"]["summary_metrics"]["total_tasks"] == 3
