"""The runner's small pieces: reading ReAct turns and MCP-Bench plans, tool arguments,
which server an exposed name belongs to, and resuming an answers file."""

from __future__ import annotations

import json

from mcpgw.runs.answers import AnswersFile, read_finished
from mcpgw.runs.model import parse_arguments
from mcpgw.runs.strategies.mcpbench import read_plan
from mcpgw.runs.strategies.react import parse_turn
from mcpgw.runs.tools import ServerNames


def test_react_turns():
    assert parse_turn("Thought: done.\nFinal Answer: 42 K") == ("final", "42 K")
    kind, (name, raw) = parse_turn('Thought: x\nAction: uc__convert\nAction Input: ```json\n{"value": 1}\n```')
    assert (kind, name, json.loads(raw)) == ("action", "uc__convert", {"value": 1})
    assert parse_turn("I think the answer is 4.") == ("invalid", None)
    # An action written before a final answer is the step to take now.
    assert parse_turn("Action: a\nAction Input: {}\nFinal Answer: no")[0] == "action"


def test_mcpbench_plans():
    go_on, calls, problem = read_plan(
        'Plan:\n{"should_continue": true, "planned_tools": '
        '[{"tool": "a", "parameters": {"x": 1}}, {"tool": "b", "parameters": "{\\"y\\": 2}"}]}'
    )
    assert (go_on, calls, problem) == (True, [("a", {"x": 1}), ("b", {"y": 2})], None)
    assert read_plan('{"should_continue": true, "planned_tools": []}')[0] is False  # nothing planned: done
    assert read_plan("no plan at all")[2] == "the reply held no JSON object"
    assert "not valid JSON" in read_plan("{oops}")[2]


def test_tool_arguments():
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("") == ({}, None)
    value, problem = parse_arguments('{"a": 1')
    assert value is None and "not valid JSON" in problem
    assert parse_arguments("[1]")[1] == "the arguments must be a JSON object, got list"


def test_server_names_by_prefix_and_title():
    names = ServerNames.from_status(
        {"servers": {"time": {"title": None}, "time_mcp": {"title": "Time MCP"}}, "separator": "__"}
    )
    assert names.server_of("time_mcp__convert_time") == "time_mcp"
    assert names.server_of("time__get_current_time") == "time"
    assert names.server_of("Time MCP:convert_time") == "time_mcp"
    assert names.server_of("other__x") is None
    assert names.matching({"Time MCP", "Unit Converter"}) == {"time_mcp"}


def test_server_names_in_front_of_one_server_named_bare():
    """Issue 44, item 2: a gateway in front of one server names its tools as the server does (/status: naming bare)."""
    one = ServerNames.from_status({"servers": {"time": {"title": "Time MCP"}}, "separator": "__", "naming": "bare"})
    assert one.server_of("convert_time") == "time"
    two = ServerNames.from_status({"servers": {"time": {}, "clock": {}}, "separator": "__", "naming": "bare"})
    assert two.server_of("convert_time") is None and two.server_of("time__convert_time") == "time"


def test_answers_resume_keeps_finished_tasks_only(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(
        json.dumps({"run_id": "a", "status": "ok"})
        + "\n"
        + json.dumps({"run_id": "b", "status": "timeout"})
        + "\n"
        + '{"run_id": "c", "sta'
    )  # a line cut by a crash
    kept = read_finished(path)
    assert list(kept) == ["a"]
    answers = AnswersFile(path, kept)
    answers.add({"run_id": "b", "status": "ok"})
    assert [json.loads(line)["run_id"] for line in path.read_text().splitlines()] == ["a", "b"]
    answers.finish(["b", "a"])
    assert [json.loads(line)["run_id"] for line in path.read_text().splitlines()] == ["b", "a"]


def test_attempts_have_run_ids_of_their_own_and_resume_by_task(tmp_path):
    from mcpgw.runs.attempts import base_of, run_id_of

    assert run_id_of("tc/t1", 1) == "tc/t1" and run_id_of("tc/t1", 3) == "tc/t1~3"
    assert base_of({"run_id": "tc/t1~3", "attempt": 3}) == base_of({"run_id": "tc/t1"}) == "tc/t1"
    path = tmp_path / "answers.jsonl"
    path.write_text(
        json.dumps({"run_id": "a~2", "attempt": 2, "status": "ok"})
        + "\n"
        + json.dumps({"run_id": "b", "attempt": 1, "status": "model_error"})
        + "\n"
    )
    kept = read_finished(path)
    assert list(kept) == ["a"]  # keyed by the task's run id, whichever attempt finished it
    answers = AnswersFile(path, kept)
    answers.add({"run_id": "b~2", "attempt": 2, "status": "ok"})
    assert [a["run_id"] for a in answers.finish(["a", "b"])] == ["a~2", "b~2"]


def test_the_next_attempt_counts_every_lane_in_the_cassette_and_replay_takes_the_final_one(tmp_path):
    from mcpgw.cassette.cassette import Cassette
    from mcpgw.runs.attempts import plan
    from mcpgw.runs.manifest import write_manifest

    cassette = Cassette(tmp_path / "rec")
    # t1: attempts 1 and 3 recorded (3 was cut short by Ctrl-C: no answer line, no manifest); "t2~x" is no attempt.
    for lane in ("t1", "t1~3", "t2~x", "other"):
        cassette.record_exchange(
            {"key": lane, "server": "@model", "method": "/v1/chat/completions", "lane": lane}, wait=False
        )
    cassette.close()
    status = {"mode": "record", "cassette": str(tmp_path / "rec")}
    assert plan(status, ["t1", "t2", "t3"]) == {"t1": 4, "t2": 1, "t3": 1}
    write_manifest(tmp_path / "rec", {"started": 1.0, "answers": [{"run_id": "t1", "attempt": 1}, {"run_id": "t2"}]})
    write_manifest(tmp_path / "rec", {"started": 2.0, "answers": [{"run_id": "t1~2", "attempt": 2}]})
    replay = {"mode": "replay", "recording": str(tmp_path / "rec"), "cassette": str(tmp_path / "log")}
    assert plan(replay, ["t1", "t2", "t3"]) == {"t1": 2, "t2": 1, "t3": 1}
    assert plan({"mode": "live", "cassette": str(tmp_path / "live")}, ["t1"]) == {"t1": 1}
