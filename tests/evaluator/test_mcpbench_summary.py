"""MCP-Bench's saved metrics file checked against call-log values (evaluator.mcpbench_summary)."""

from mcpgw.evaluator.mcpbench_summary import compare, is_summary

SAVED = {
    "valid_tool_name_rate": 1.0,
    "input_schema_compliance": 0.5,
    "tool_call_success_rate": 1.0,
    "avg_tool_calls_per_task": 2.0,
    "task_completion_score": 6.0,
}


def task(calls, ok, tool_errors=0):
    return {"calls": calls, "successful_calls": ok, "tool_error_calls": tool_errors}


def test_a_flat_metrics_object_is_a_summary_and_per_task_results_are_not():
    assert is_summary(SAVED)
    assert not is_summary({"model": [{"execution_results": []}]})
    assert not is_summary({**SAVED, "final_metrics": {"m": SAVED}})


def test_fields_agree_or_differ_with_both_values_given():
    computed = {
        "valid_tool_name_rate": 1.0,
        "input_schema_compliance": 0.75,
        "tool_call_success_rate": 1.0,
        "avg_tool_calls_per_task": 2.0,
    }
    check = compare(SAVED, computed, {"a": task(2, 2), "b": task(2, 2)})
    assert not check["agrees"]
    assert check["fields"]["input_schema_compliance"] == {"reported": 0.5, "call_log": 0.75, "agrees": False}
    assert check["fields"]["valid_tool_name_rate"]["agrees"]


def test_tool_errors_explain_a_success_rate_saved_over_http():
    # Task a: 1 of 2 calls answered isError. MCP-Bench over HTTP saved 1.0; the call log says 0.75.
    computed = {**SAVED, "tool_call_success_rate": 0.75}
    explained = compare(SAVED, computed, {"a": task(2, 1, tool_errors=1), "b": task(2, 2)})["fields"][
        "tool_call_success_rate"
    ]
    assert explained["agrees"] and explained["call_log_over_http"] == 1.0 and "isError" in explained["note"]
    # The same gap without tool errors (a refused call, say) is not explained away.
    unexplained = compare(SAVED, computed, {"a": task(2, 1), "b": task(2, 2)})["fields"]["tool_call_success_rate"]
    assert not unexplained["agrees"]
