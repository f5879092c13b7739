"""Exposed names line up with the benchmarks' names through the lock's titles, and a log
whose calls reach none of the tasks' servers is reported, not scored as a silent 0."""

from __future__ import annotations

import json

from mcpgw.evaluator.names import bare_tool
from mcpgw.evaluator.pipeline import EvalInputs, evaluate
from mcpgw.evaluator.tasks import Answer

TITLES = {"unit_converter": "Unit Converter"}


def call(run_id: str, server: str, tool: str, **extra) -> dict:
    return {
        "run_id": run_id,
        "exposed_name": f"{server}__{tool}",
        "server": server,
        "tool": tool,
        "arguments": {"v": 1},
        "known_tool": True,
        "outcome": "ok",
        "is_error": False,
        "validation": {"valid": True, "errors": []},
        **extra,
    }


def mcpbench_tasks(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(
        json.dumps(
            {
                "server_tasks": [
                    {"server_name": "Unit Converter", "tasks": [{"task_id": "t1", "task_description": "convert"}]}
                ]
            }
        )
    )
    return str(path)


def test_bare_tool_names():
    assert bare_tool("unit_converter__convert_temperature", TITLES) == "convert_temperature"
    assert bare_tool("Unit Converter:convert_temperature", TITLES) == "convert_temperature"
    assert bare_tool("convert_temperature", TITLES) == "convert_temperature"


def test_task_servers_matched_through_titles(tmp_path):
    inputs = EvalInputs(
        calls=[call("r1", "unit_converter", "convert_temperature")],
        task_files=[mcpbench_tasks(tmp_path)],
        answers={"r1": Answer("r1", "t1", "m", "x")},
        task_servers_only=True,
        titles=TITLES,
    )
    report = evaluate(inputs)
    assert report["mcpbench_rules"]["m"]["overall"]["valid_tool_name_rate"] == 1.0
    assert not [w for w in report["warnings"] if w.startswith("none of the")]


def test_no_call_on_a_task_server_is_said_loudly(tmp_path):
    inputs = EvalInputs(
        calls=[call("r1", "uc", "convert_temperature")],
        task_files=[mcpbench_tasks(tmp_path)],
        answers={"r1": Answer("r1", "t1", "m", "x")},
        task_servers_only=True,
    )
    report = evaluate(inputs)
    warning = [w for w in report["warnings"] if w.startswith("none of the")]
    assert warning and "uc" in warning[0] and "Unit Converter" in warning[0]


def test_mcpeval_truth_in_exposed_names_matches(tmp_path):
    truth = tmp_path / "truth.jsonl"
    truth.write_text(
        json.dumps(
            {
                "task_id": "t1",
                "tool_calls": [{"tool_name": "unit_converter__convert_temperature", "tool_parameters": {"v": 1}}],
            }
        )
        + "\n"
    )
    inputs = EvalInputs(
        calls=[call("r1", "unit_converter", "convert_temperature")],
        task_files=[str(truth)],
        answers={"r1": Answer("r1", "t1", "m", "x")},
    )
    report = evaluate(inputs)
    (per_model,) = report["mcpeval_match"].values()
    task = per_model["m"]["tasks"]["t1"]
    assert task["missing_tools"] == [] and task["extra_tools"] == []
    assert per_model["m"]["summary"]["strict"]["tool_name_accuracy"] == 1.0
