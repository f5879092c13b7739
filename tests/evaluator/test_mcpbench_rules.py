"""MCP-Bench's rule metrics on hand-computed cases; each quirk has its own assertion."""

import pytest

from mcpgw.evaluator.mcpbench_rules import aggregate_tasks, mean_skipping_none, score_runs, task_metrics
from mcpgw.evaluator.schemas import SchemaChecks
from tests.evaluator.conftest import call

INVALID = {"valid": False, "errors": [{"path": "$.n", "message": "x", "keyword": "type"}]}


def task_a():
    return [
        call(seq=0),  # valid, compliant, success
        call(seq=1, validation=INVALID, outcome="rejected"),  # valid, not compliant, failed
        call(seq=2, known_tool=False, tool=None, server=None, exposed_name="wether__forcast", outcome="rejected"),
        call(seq=3, outcome="ok", is_error=True),  # isError: valid, compliant, failed
        call(seq=4, validation=None, outcome="timeout"),  # no verdict: compliant, unchecked, failed
    ]


def task_b():  # only unknown names
    return [call(seq=i, known_tool=False, tool=None, exposed_name="nope", outcome="rejected") for i in range(2)]


def test_rates_for_one_task():
    m = task_metrics(task_a())
    assert m["valid_tool_name_rate"] == pytest.approx(4 / 5)
    assert m["input_schema_compliance"] == pytest.approx(3 / 4)
    assert m["execution_success_rate"] == pytest.approx(1 / 5)
    assert m["valid_call_failure_rate"] == pytest.approx(3 / 4)
    assert (m["calls"], m["valid_name_calls"], m["unchecked_calls"]) == (5, 4, 1)


def test_no_valid_name_calls_gives_zero_not_none():
    # Quirk: both ratios over valid-name calls are 0.0 (not None) when there are none.
    m = task_metrics(task_b())
    assert m["valid_tool_name_rate"] == 0.0 and m["execution_success_rate"] == 0.0
    assert m["input_schema_compliance"] == 0.0 and m["valid_call_failure_rate"] == 0.0


def test_task_without_calls_is_none():
    m = task_metrics([])
    assert all(
        m[k] is None
        for k in (
            "valid_tool_name_rate",
            "input_schema_compliance",
            "execution_success_rate",
            "valid_call_failure_rate",
        )
    )


def test_none_is_skipped_when_averaging_and_empty_average_is_zero():
    agg = aggregate_tasks([task_metrics(task_a()), task_metrics(task_b()), task_metrics([])])
    assert agg["valid_tool_name_rate"] == pytest.approx((0.8 + 0.0) / 2)  # the empty task does not count
    assert agg["input_schema_compliance"] == pytest.approx((0.75 + 0.0) / 2)
    assert agg["tool_call_success_rate"] == pytest.approx((0.2 + 0.0) / 2)  # MCP-Bench's name for the mean
    assert (agg["tasks"], agg["tasks_with_calls"]) == (3, 2)
    # Calls per task counts the zero-call task: (5 + 2 + 0) / 3.
    assert agg["avg_tool_calls_per_task"] == pytest.approx(7 / 3)
    assert aggregate_tasks([task_metrics([])])["valid_tool_name_rate"] == 0.0  # safe_avg of nothing
    assert mean_skipping_none([None, 1.0, None, 0.5]) == 0.75


def test_per_file_then_across_files_is_not_pooled():
    runs = {"a": task_a(), "b": task_b()}
    # file one holds a and b; file two holds only a run with no calls at all.
    result = score_runs(runs, {"one.json": ["a", "b"], "two.json": ["missing-run"]})
    assert result["files"]["one.json"]["valid_tool_name_rate"] == pytest.approx(0.4)
    assert result["files"]["two.json"]["valid_tool_name_rate"] == 0.0
    assert result["overall"]["valid_tool_name_rate"] == pytest.approx(0.2)  # mean of files, not of tasks (0.4)
    assert result["tasks"]["missing-run"]["valid_tool_name_rate"] is None
    assert result["overall"]["files"] == 2 and result["overall"]["calls"] == 7


def test_known_schema_is_rechecked_with_mcpbench_semantics():
    checks = SchemaChecks()
    strict = checks.add({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    broken = checks.add({"type": "object", "properties": {"n": {"type": "nonsense"}}})
    empty = checks.add({})
    calls = [
        call(seq=0, input_schema_digest=strict, arguments={"n": "x"}),  # verdict said valid; schema says no
        call(seq=1, input_schema_digest=strict, arguments={"n": 3}, validation=INVALID),  # and the other way round
        call(seq=2, input_schema_digest=broken, arguments={"n": 1}),  # invalid schema: failure
        call(seq=3, input_schema_digest=empty, arguments="whatever", validation=INVALID),  # empty schema passes
        call(seq=4, input_schema_digest="not-in-catalog", validation=INVALID),  # unknown digest: recorded verdict
    ]
    m = task_metrics(calls, checks=checks, recheck=True)
    assert m["input_schema_compliance"] == pytest.approx(2 / 5)
    assert m["unchecked_calls"] == 0
    assert "invalid schema" in checks.problems[broken]


def test_schemas_fill_in_for_missing_verdicts_by_default():
    checks = SchemaChecks()
    strict = checks.add({"type": "object", "required": ["n"]})
    calls = [
        call(seq=0, input_schema_digest=strict, arguments={}),  # verdict says valid: trusted
        call(seq=1, input_schema_digest=strict, arguments={}, validation=None),  # no verdict: schema says no
        call(seq=2, input_schema_digest=strict, arguments={"n": 1}, validation={"valid": None, "errors": []}),
        call(seq=3, input_schema_digest=None, validation=None),  # neither: compliant, unchecked
    ]
    m = task_metrics(calls, checks=checks)
    assert m["input_schema_compliance"] == pytest.approx(3 / 4) and m["unchecked_calls"] == 1


def test_task_servers_restrict_valid_names():
    calls = [
        call(seq=0, server="weather"),
        call(seq=1, server="time", exposed_name="time__now"),
        call(seq=2, server="x", exposed_name="Weather Server:forecast"),
    ]
    m = task_metrics(calls, servers={"time", "Weather Server"})
    assert m["valid_tool_name_rate"] == pytest.approx(2 / 3)


def test_null_arguments_are_rechecked_with_mcpbench_semantics():
    # The gateway validates null arguments as {} (required q missing: INVALID). MCP-Bench validates None
    # itself, which {"required": ["q"]} without "type" accepts: 1 compliant / 1 valid-name call = 1.0.
    checks = SchemaChecks()
    loose = checks.add({"required": ["q"]})
    calls = [call(seq=0, input_schema_digest=loose, arguments=None, validation=INVALID)]
    assert task_metrics(calls, checks=checks)["input_schema_compliance"] == 1.0
    # Without the schema there is nothing to recheck with: the recorded verdict stands (0/1).
    assert task_metrics(calls)["input_schema_compliance"] == 0.0


def test_schema_the_gateway_found_unusable_is_rechecked():
    # The schema `false` fails every call in JSON Schema (the gateway's verdict), but MCP-Bench returns True
    # for any falsy schema before validating: 1/1.
    checks = SchemaChecks()
    never = checks.add(False)
    unusable = {"valid": False, "errors": [], "schema_invalid": True}
    calls = [call(seq=0, input_schema_digest=never, validation=unusable)]
    assert task_metrics(calls, checks=checks)["input_schema_compliance"] == 1.0


def test_server_utilization_from_the_call_log():
    # Valid calls count under their benchmark display name ("Server Name:tool"), else the gateway's server id;
    # unknown names have no server. Distinct: "Weather Server", "time" -> 2, cross-server.
    calls = [
        call(seq=0, exposed_name="Weather Server:forecast"),
        call(seq=1, exposed_name="Weather Server:forecast"),
        call(seq=2, server="time", tool="now", exposed_name="time__now"),
        call(seq=3, known_tool=False, tool=None, server=None, exposed_name="nope", outcome="rejected"),
    ]
    util = task_metrics(calls)["server_utilization_metrics"]
    assert util == {
        "server_count": 2,
        "cross_server_coordination": True,
        "server_distribution": {"Weather Server": 2, "time": 1},
    }


def test_reported_planning_compliance_and_rounds_reach_the_aggregate():
    # Run a: planning 0.5, rounds 4; run b (no calls): planning 1.0, rounds 2 -> means 0.75 and 3.0.
    # Nothing reported anywhere -> None (MCP-Bench has no value to average either).
    runs = {"a": task_a()}
    result = score_runs(
        runs,
        {"f": ["a", "b"]},
        reported_by_run={
            "a": {"planning_json_compliance": 0.5, "total_rounds": 4},
            "b": {"planning_json_compliance": 1.0, "total_rounds": 2},
        },
    )
    assert result["files"]["f"]["planning_json_compliance"] == 0.75
    assert result["files"]["f"]["avg_total_rounds"] == 3.0
    assert result["files"]["f"]["avg_tool_calls_per_task"] == 2.5  # (5 + 0) / 2: the zero-call task counts
    assert score_runs(runs)["overall"]["planning_json_compliance"] is None


def test_replay_refusals_are_failed_calls():
    # A replay miss or divergence never reached a server: a failure, as an exception is in MCP-Bench.
    # E = [ok, miss, diverged], all valid names: success 1/3, valid-call failures 2/3.
    m = task_metrics([call(seq=0), call(seq=1, outcome="miss"), call(seq=2, outcome="diverged")])
    assert m["execution_success_rate"] == pytest.approx(1 / 3) and m["valid_call_failure_rate"] == pytest.approx(2 / 3)
