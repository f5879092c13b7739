"""Issue 44.8: `mcpgw eval --tasks <MCP-Bench task file>` over a call log whose runs (or sessions) carry no
task id of the file said nothing and left MCP-Bench's comparison empty; and the runner's saved metrics file
given with --results was labelled "mcpeval" in the report's inputs."""

from __future__ import annotations

import json

from mcpgw.evaluator.pipeline import EvalInputs, evaluate
from tests.evaluator.test_names import call, mcpbench_tasks

SAVED = {
    "valid_tool_name_rate": 1.0,
    "input_schema_compliance": 1.0,
    "tool_call_success_rate": 1.0,
    "avg_tool_calls_per_task": 1.0,
}


def test_task_ids_that_match_no_run_are_said(tmp_path):
    calls = [
        call("mb", "unit_converter", "convert_temperature", session_id="s1"),
        call("mb", "unit_converter", "convert_length", session_id="s2"),
    ]
    report = evaluate(EvalInputs(calls=calls, task_files=[mcpbench_tasks(tmp_path)], tasks_by="session"))
    assert report["mcpbench_rules"] == {}
    (said,) = [w for w in report["warnings"] if "has the id of a task" in w]
    assert "2 run(s) (by session: 'mb/s1', 'mb/s2')" in said and "'t1'" in said and "tasks.json" in said
    assert "without --tasks" in said


def test_matching_task_ids_give_no_such_warning(tmp_path):
    report = evaluate(
        EvalInputs(calls=[call("t1", "unit_converter", "convert_temperature")], task_files=[mcpbench_tasks(tmp_path)])
    )
    assert report["mcpbench_rules"] and not [w for w in report["warnings"] if "has the id of a task" in w]


def test_the_runners_metrics_file_is_labelled_mcpbench(tmp_path):
    saved = tmp_path / "replayed.json"
    saved.write_text(json.dumps(SAVED))
    report = evaluate(
        EvalInputs(
            calls=[call("t1", "unit_converter", "convert_temperature")], results=[str(saved)], call_log_given=True
        )
    )
    assert report["inputs"]["results"] == {str(saved): "mcpbench summary"}
    assert str(saved) in report["mcpbench_summary"]
