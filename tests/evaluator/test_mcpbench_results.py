"""MCP-Bench's per-task results re-scored: each quirk of MCP-Bench's evaluator has a hand-made case,
with the value MCP-Bench's formula gives worked out in the comment."""

import json

import pytest

from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.mcpbench_results import Scorer, read_results, score_results, tools_from_catalog
from mcpgw.evaluator.mcpbench_rules import aggregate_tasks, score_calls

SEARCH = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
TOOLS = {
    "Search:find": {"server": "Search", "name": "find", "description": "", "input_schema": SEARCH},
    "Time MCP:now": {"server": "Time MCP", "name": "now", "description": "", "input_schema": {}},
}


def execution(tool, parameters, success=True, server=None):
    record = {"tool": tool, "parameters": parameters, "round_num": 1, "success": success}
    if server is not None:
        record["server"] = server
    elif tool in TOOLS:
        record["server"] = TOOLS[tool]["server"]
    return record


def rescore(executions, tools=TOOLS, **task):
    from mcpgw.evaluator.mcpbench_results import ResultTask

    defaults = dict(
        task_id="t",
        model="m",
        status="completed",
        available_tools=tools,
        planning_json_compliance=1.0,
        total_rounds=None,
        evaluation=None,
    )
    return Scorer().task(ResultTask(execution_results=executions, **{**defaults, **task}), None)


def test_null_parameters_pass_a_schema_with_required_but_no_type():
    # MCP-Bench: jsonschema.validate(None, {"required": ["q"]}): `required` only applies to objects, so None
    # passes -> 1 compliant / 1 valid-name call = 1.0. The same schema rejects {} (q missing) -> 0.0.
    loose = {"Search:find": {"server": "Search", "input_schema": {"required": ["q"]}}}
    assert rescore([execution("Search:find", None, server="Search")], loose)["input_schema_compliance"] == 1.0
    assert rescore([execution("Search:find", {}, server="Search")], loose)["input_schema_compliance"] == 0.0
    # With a "type": "object" schema None fails: 0 / 1.
    assert rescore([execution("Search:find", None)])["input_schema_compliance"] == 0.0


def test_the_gateway_verdict_keeps_json_schema_semantics_for_absent_arguments(tmp_path):
    # The gateway validates absent/null arguments as {} (what the server receives): required fails there,
    # where MCP-Bench's rescoring (above) lets a None through. A tools/call without arguments, through the router:
    import anyio

    from mcpgw.cassette.store import CassetteStore
    from mcpgw.gateway.routing.router import Caller, Router
    from mcpgw.gateway.specs.settings import Settings
    from mcpgw.gateway.tools.catalog import ServerCatalog
    from mcpgw.gateway.upstreams.upstream import HandlerUpstream
    from mcpgw.lock.config import ServerSpec
    from mcpgw.recorder.calllog import CallLog, iter_calls

    async def answer(method, params):
        return {"content": [{"type": "text", "text": "found"}]}

    catalog = ServerCatalog(
        {"capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}},
        tools=[{"name": "find", "inputSchema": {"required": ["q"]}}],
    )
    store = CassetteStore(tmp_path / "c")
    router = Router(
        [ServerSpec("search", "stdio", "x")],
        {"search": HandlerUpstream("search", answer, catalog)},
        Settings(validate="audit", naming="prefix"),
        CallLog(store),
    )

    async def calls() -> None:
        async with router.running():
            await router.until_settled()
            for params in ({"name": "search__find"}, {"name": "search__find", "arguments": None}):
                await router.call_tool(params, Caller())

    anyio.run(calls)
    store.close()
    verdicts = [r["validation"] for r in iter_calls(tmp_path / "c")]
    assert len(verdicts) == 2 and all(v["valid"] is False and "'q'" in json.dumps(v) for v in verdicts)


def test_null_catalog_entry_makes_the_call_non_compliant():
    # available_tools {"Broken:x": null}: "Broken:x" in available_tools -> a valid name; then
    # None.get("input_schema") raises inside MCP-Bench's catch-all -> non-compliant.
    # Calls: Broken:x (valid, not compliant), Search:find {"q": "a"} (valid, compliant):
    # valid_tool_name_rate 2/2 = 1.0, input_schema_compliance 1/2 = 0.5.
    tools = {**TOOLS, "Broken:x": None}
    row = rescore([execution("Broken:x", {}, server="Broken"), execution("Search:find", {"q": "a"})], tools)
    assert row["valid_tool_name_rate"] == 1.0 and row["input_schema_compliance"] == 0.5


@pytest.mark.parametrize(
    "schema, compliant",
    [
        (["not", "a", "schema"], False),  # truthy non-object: jsonschema raises, caught -> False
        ("type: object", False),  # a string: same
        (7, False),  # a number: `"$schema" in 7` raises TypeError, caught -> False
        ([], True),  # falsy: MCP-Bench returns True before validating
        ("", True),
        (False, True),  # even the schema `false` is falsy, so it passes
        (True, True),  # `true` accepts everything
    ],
)
def test_non_object_input_schema(schema, compliant):
    tools = {"Odd:t": {"server": "Odd", "input_schema": schema}, **TOOLS}
    # One call to the odd tool and one well-formed call to Search:find:
    # compliance = (1 if the odd schema passes else 0) + 1, over 2 valid-name calls.
    row = rescore([execution("Odd:t", {"a": 1}, server="Odd"), execution("Search:find", {"q": "x"})], tools)
    assert row["input_schema_compliance"] == (2 / 2 if compliant else 1 / 2)


def test_a_tool_entry_that_is_a_list_or_string_is_non_compliant():
    # available_tools {"Odd:t": ["x"]}: ["x"].get raises AttributeError -> non-compliant (name still valid).
    row = rescore([execution("Odd:t", {}, server="Odd")], {"Odd:t": ["x"], "Odd:u": "text"})
    assert (row["valid_tool_name_rate"], row["input_schema_compliance"]) == (1.0, 0.0)


def test_only_the_input_schema_key_is_read():
    # MCP-Bench reads info.get("input_schema", {}); an "inputSchema" key is not seen, so nothing is
    # checked and the call passes: 1/1.
    tools = {"Search:find": {"server": "Search", "inputSchema": SEARCH}}
    assert rescore([execution("Search:find", {"q": 5}, server="Search")], tools)["input_schema_compliance"] == 1.0


def test_records_that_are_not_objects_count_as_failed_calls_to_the_empty_name():
    # safe_get on a non-dict returns the defaults: tool "" (not available), success False, no server.
    # E = [ok call, "garbage", null]: valid 1/3, success 1/3, compliance 1/1, failure 0/1.
    row = rescore([execution("Search:find", {"q": "a"}), "garbage", None])
    assert row["valid_tool_name_rate"] == pytest.approx(1 / 3)
    assert row["execution_success_rate"] == pytest.approx(1 / 3)
    assert row["input_schema_compliance"] == 1.0 and row["valid_call_failure_rate"] == 0.0


def test_unknown_tool_and_failures():
    # E = [Search:find ok, Search:find {"q": 1} failed, Nope:x failed (no server key, as MCP-Bench records it)]
    # valid 2/3; compliance 1/2 (q is not a string); success 1/3; valid-call failures 1/2.
    row = rescore(
        [
            execution("Search:find", {"q": "a"}),
            execution("Search:find", {"q": 1}, success=False),
            {"tool": "Nope:x", "parameters": {}, "success": False},
        ]
    )
    assert row["valid_tool_name_rate"] == pytest.approx(2 / 3)
    assert row["input_schema_compliance"] == 0.5 and row["valid_call_failure_rate"] == 0.5
    assert row["execution_success_rate"] == pytest.approx(1 / 3)


def test_server_utilization():
    # Servers are the truthy `server` fields: Search x2, Time MCP x1; the unknown tool has none.
    # server_count 2, cross_server_coordination True, distribution {"Search": 2, "Time MCP": 1}.
    row = rescore(
        [
            execution("Search:find", {"q": "a"}),
            execution("Time MCP:now", {}),
            execution("Search:find", {"q": "b"}),
            {"tool": "Nope:x", "success": False},
        ]
    )
    assert row["server_utilization_metrics"] == {
        "server_count": 2,
        "cross_server_coordination": True,
        "server_distribution": {"Search": 2, "Time MCP": 1},
    }
    single = rescore([execution("Search:find", {"q": "a"})])["server_utilization_metrics"]
    assert single["server_count"] == 1 and single["cross_server_coordination"] is False


def test_task_with_zero_calls():
    # No execution results: the four rates are None (left out of averages), 0 servers, no coordination,
    # and planning JSON compliance is still reported.
    row = rescore([], planning_json_compliance=0.5)
    assert all(
        row[k] is None
        for k in (
            "input_schema_compliance",
            "valid_tool_name_rate",
            "execution_success_rate",
            "valid_call_failure_rate",
        )
    )
    assert row["server_utilization_metrics"] == {
        "server_count": 0,
        "cross_server_coordination": False,
        "server_distribution": {},
    }
    assert row["planning_json_compliance"] == 0.5 and row["calls"] == 0


def test_file_aggregate_as_mcp_bench_saves_it():
    # Task A: 2 calls on Search and Time MCP, all valid and compliant, 1 failed:
    #   valid 1.0, compliance 1.0, success 0.5, failure 0.5, servers 2 (cross), planning 0.5, rounds 3.
    # Task B: 0 calls: rates None, servers 0, planning 1.0, rounds 1.
    # Task C: failed run (status "failed"): left out of every average, counted in task_success_rate.
    a = rescore(
        [execution("Search:find", {"q": "a"}), execution("Time MCP:now", {}, success=False)],
        planning_json_compliance=0.5,
        total_rounds=3,
    )
    b = rescore([], total_rounds=1)
    c = {**rescore([]), "status": "failed"}
    agg = aggregate_tasks([a, b, c])
    assert agg["valid_tool_name_rate"] == 1.0 and agg["input_schema_compliance"] == 1.0  # safe_avg skips B's None
    assert agg["tool_call_success_rate"] == 0.5 and agg["valid_call_failure_rate"] == 0.5
    assert agg["avg_tool_calls_per_task"] == 1.0  # (2 + 0) / 2 completed tasks
    assert agg["avg_servers_used"] == 1.0  # (2 + 0) / 2
    assert agg["cross_server_coordination_rate"] == 0.5  # 1 of 2 completed tasks
    assert agg["planning_json_compliance"] == 0.75  # (0.5 + 1.0) / 2
    assert agg["avg_total_rounds"] == 2.0  # (3 + 1) / 2
    assert agg["task_success_rate"] == pytest.approx(2 / 3)
    assert (agg["tasks"], agg["tasks_scored"], agg["tasks_with_calls"]) == (3, 2, 1)


def test_nothing_scored_averages_to_zero():
    # safe_avg of an empty list is 0.0; the coordination rate over no tasks is 0.0 too.
    agg = aggregate_tasks([score_calls([])])
    assert agg["input_schema_compliance"] == 0.0 and agg["cross_server_coordination_rate"] == 0.0


def write(tmp_path, name, data, jsonl=False):
    path = tmp_path / name
    if jsonl:
        path.write_text("\n".join(json.dumps(item) for item in data) + "\n")
    else:
        path.write_text(json.dumps(data))
    return str(path)


def runner_task(task_id, executions, evaluation=..., **extra):
    task = {
        "task_id": task_id,
        "server_name": "Search",
        "model_name": "m1",
        "status": "completed",
        "execution_results": executions,
        "total_rounds": 2,
        "available_tools": TOOLS,
        "planning_json_compliance": 1.0,
        **extra,
    }
    if evaluation is not ...:
        task["evaluation"] = evaluation
    return task


def test_shapes_read(tmp_path):
    one = runner_task("a", [execution("Search:find", {"q": "x"})])
    for data, jsonl in (
        (one, False),
        ([one, {**one, "task_id": "b"}], False),
        ([one], True),
        ({"m1": [one]}, False),
        ({"task_run_results": {"m1": [one]}}, False),
        ({"results": [one]}, False),
    ):
        tasks = read_results(write(tmp_path, "r.json", data, jsonl))
        assert tasks[0].task_id == "a" and tasks[0].model == "m1" and tasks[0].total_rounds == 2


def test_missing_planning_compliance_defaults_to_one(tmp_path):
    # The runner passes result.get('planning_json_compliance', 1.0) to the evaluator.
    task = runner_task("a", [])
    del task["planning_json_compliance"]
    (read,) = read_results(write(tmp_path, "r.json", [task]))
    assert read.planning_json_compliance == 1.0


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"input_schema_compliance": 0.9, "tool_call_success_rate": 0.8}, "metrics summary"),
        ([{"task_id": "a", "status": "completed"}], "execution_results"),
        ([{"task_id": "a", "execution_results": {}}], "execution_results"),
        ([{"task_id": "a", "execution_results": [], "available_tools": []}], "available_tools"),
        ([], "no task results"),
    ],
)
def test_bad_results_are_clear_errors(tmp_path, data, problem):
    with pytest.raises(InputError, match=problem):
        read_results(write(tmp_path, "bad.json", data))


def test_missing_available_tools_needs_a_catalog(tmp_path):
    task = runner_task("a", [execution("Search:find", {"q": "x"})])
    del task["available_tools"]
    tasks = read_results(write(tmp_path, "r.json", [task]))
    with pytest.raises(InputError, match="available_tools"):
        score_results({"r.json": tasks})
    # From a catalog in MCP-Bench's shape it scores: 1 valid, compliant call.
    catalog = [
        {"server": "Search", "tool": "find", "exposed_name": "Search:find", "inputSchema": SEARCH, "unusable": None}
    ]
    scored = score_results({"r.json": tasks}, fallback_tools=tools_from_catalog(catalog))
    assert scored["m1"]["tasks"]["a"]["input_schema_compliance"] == 1.0


def test_comparison_with_the_saved_evaluation(tmp_path):
    # Task a's saved evaluation agrees; task b's claims a compliance MCP-Bench's formula cannot give
    # (one call, {"q": 3} against a string property -> 0/1 = 0.0, not 1.0).
    good = {
        "input_schema_compliance": 1.0,
        "valid_tool_name_rate": 1.0,
        "execution_success_rate": 1.0,
        "valid_call_failure_rate": 0.0,
        "planning_json_compliance": 1.0,
        "server_utilization_metrics": {
            "server_count": 1,
            "cross_server_coordination": False,
            "server_distribution": {"Search": 1},
        },
    }
    tasks = [
        runner_task("a", [execution("Search:find", {"q": "x"})], good),
        runner_task("b", [execution("Search:find", {"q": 3})], {**good, "input_schema_compliance": 1.0}),
        runner_task("c", [execution("Search:find", {"q": "x"})], None),
    ]  # evaluation failed: skipped
    scored = score_results({"r.json": read_results(write(tmp_path, "r.json", tasks))})["m1"]
    assert scored["disagreements"] == [{"task": "b", "metric": "input_schema_compliance", "ours": 0.0, "reported": 1.0}]
    # c is left out of the averages as MCP-Bench leaves it out: compliance (1.0 + 0.0) / 2.
    assert scored["files"]["r.json"]["input_schema_compliance"] == 0.5
    assert scored["files"]["r.json"]["tasks_scored"] == 2 and "excluded" in scored["tasks"]["c"]


def test_unhashable_names_leave_the_task_out_as_mcpbench_would():
    # `["a"] in available_tools` raises TypeError in MCP-Bench's evaluator; evaluate() catches it and returns
    # None, and its aggregation skips tasks without an evaluation. The row is still shown (the name is not a
    # tool: valid 0/1), marked excluded, and the file average is over the other task only: 1.0.
    bad = rescore([{"tool": ["a"], "parameters": {}, "success": False}])
    assert bad["valid_tool_name_rate"] == 0.0 and "excluded" in bad
    good = rescore([execution("Search:find", {"q": "a"})])
    assert aggregate_tasks([bad, good])["valid_tool_name_rate"] == 1.0
    assert "excluded" in rescore([execution("Search:find", {"q": "a"}, server={"name": "Search"})])


def test_results_with_saved_summary_beside_the_tasks_are_rescored(tmp_path):
    # Some runners save the summary next to the per-task results; the tasks are what is read.
    data = {
        "final_metrics": {"m1": {"accuracy_metrics": {}}},
        "run_metadata": {},
        "task_run_results": {"m1": [runner_task("a", [execution("Search:find", {"q": "x"})])]},
    }
    from mcpgw.evaluator.mcpbench_results import results_kind

    assert results_kind(data, "r.json") == "mcpbench"
    assert [t.task_id for t in read_results(write(tmp_path, "r.json", data))] == ["a"]
    with pytest.raises(InputError, match="metrics summary"):
        results_kind({"final_metrics": {}}, "s.json")
