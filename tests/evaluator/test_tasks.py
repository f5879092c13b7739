import json

import pytest

from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.tasks import (
    detect_kind,
    parse_label,
    read_agentbench_tasks,
    read_answers,
    read_labels,
    read_mcpbench_tasks,
    read_mcpeval_tasks,
)

MCPBENCH = {
    "generation_info": {"model": "x"},
    "server_tasks": [
        {
            "server_name": "National Parks",
            "tasks": [
                {
                    "task_id": "np_1",
                    "task_description": "Find parks in CA with camping.",
                    "fuzzy_description": "I want to camp somewhere nice in California.",
                    "dependency_analysis": "search parks -> get campgrounds",
                    "distraction_servers": ["Math MCP", "NASA Data"],
                },
            ],
        },
        {
            "server_name": "Weather Data+Unit Converter",
            "task": {
                "task_id": "wx_1",
                "task_description": "Convert the forecast.",
                "dependency_analysis": {"chain": ["a", "b"]},
            },
        },
    ],
}


def test_mcpbench_server_tasks(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(MCPBENCH, indent=2))
    tasks = read_mcpbench_tasks(path)
    assert [t.task_id for t in tasks] == ["np_1", "wx_1"]
    first, second = tasks
    assert first.fuzzy_description.startswith("I want") and first.task_description.startswith("Find")
    assert first.available_servers == {"National Parks", "Time MCP", "Math MCP", "NASA Data"}
    assert second.servers == ["Weather Data", "Unit Converter"]
    assert second.fuzzy_description == "Convert the forecast."  # falls back to the concrete description
    assert '"chain"' in second.dependency_analysis
    assert detect_kind(path) == "mcpbench"


def test_mcpbench_other_layouts(tmp_path):
    combos = {
        "combinations": [
            {
                "combination_name": "c",
                "servers": ["A", "B"],
                "generated_tasks": [{"task_id": "c1", "task_description": "d"}],
            }
        ]
    }
    flat = {"tasks": [{"server_name": "A", "task": {"task_id": "f1", "task_description": "d"}}]}
    bare = [{"server_name": "A", "task": {"task_id": "b1", "task_description": "d"}}]
    for name, data, expected in (("c.json", combos, ["A", "B"]), ("f.json", flat, ["A"]), ("b.json", bare, ["A"])):
        path = tmp_path / name
        path.write_text(json.dumps(data))
        assert read_mcpbench_tasks(path)[0].servers == expected
        assert detect_kind(path) == "mcpbench"


def test_mcpbench_errors_name_line_and_field(tmp_path):
    bad = json.loads(json.dumps(MCPBENCH))
    del bad["server_tasks"][0]["tasks"][0]["task_id"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad, indent=2))
    with pytest.raises(InputError) as info:
        read_mcpbench_tasks(path)
    text = path.read_text().splitlines()
    assert info.value.field == "server_tasks[0].tasks[0].task_id"
    assert text[info.value.line - 1].strip() == "{"  # the line where that task object starts
    assert "missing" in info.value.message
    bad["server_tasks"][0]["tasks"][0]["task_id"] = "x"
    bad["server_tasks"][0]["tasks"][0]["distraction_servers"] = ["ok", 5]
    path.write_text(json.dumps(bad, indent=2))
    with pytest.raises(InputError, match=r"distraction_servers\[1\]"):
        read_mcpbench_tasks(path)
    path.write_text('{"server_tasks": [\n  {"server_name": "A", "tasks": [}\n]}')
    with pytest.raises(InputError) as info:
        read_mcpbench_tasks(path)
    assert info.value.line == 2 and "not valid JSON" in info.value.message


def test_mcpeval_jsonl_and_json_array(tmp_path):
    records = [
        {
            "id": "t1",
            "name": "n",
            "description": "Look up",
            "goal": "the weather",
            "tool_calls": [{"tool_name": "forecast", "tool_parameters": {"city": "Oslo"}}],
            "final_response": "Sunny",
        },
        {"task_id": "t2", "tool_calls": [], "model": "m1"},
        {"task_id": "", "id": "t3", "tool_calls": []},
    ]  # an empty task_id falls through, as in MCPEval
    jsonl = tmp_path / "gt.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in records))
    array = tmp_path / "gt.json"
    array.write_text(json.dumps(records, indent=1))
    for path in (jsonl, array):
        tasks = read_mcpeval_tasks(path)
        assert tasks["t1"].tool_calls == [{"tool_name": "forecast", "tool_parameters": {"city": "Oslo"}}]
        assert tasks["t1"].description == "Look up the weather" and tasks["t2"].model == "m1"
        assert "t3" in tasks
        assert detect_kind(path) == "mcpeval"


@pytest.mark.parametrize(
    "record, field",
    [
        ({"tool_calls": []}, "id"),  # ground truth: MCPEval reads `id` first
        ({"id": "a", "tool_calls": {}}, "tool_calls"),
        ({"id": "a", "tool_calls": [{"tool_parameters": {}}]}, "tool_calls[0].tool_name"),
        ({"id": "a", "tool_calls": [{"tool_name": "x", "tool_parameters": [1]}]}, "tool_calls[0].tool_parameters"),
    ],
)
def test_mcpeval_errors(tmp_path, record, field):
    path = tmp_path / "gt.jsonl"
    path.write_text(json.dumps({"id": "ok", "tool_calls": []}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError) as info:
        read_mcpeval_tasks(path)
    assert (info.value.line, info.value.field) == (2, field)


def test_duplicate_ids_are_refused(tmp_path):
    path = tmp_path / "gt.jsonl"
    path.write_text(json.dumps({"id": "a", "tool_calls": []}) + "\n" + json.dumps({"id": "a", "tool_calls": []}))
    with pytest.raises(InputError, match="duplicate task id 'a' \\(first at line 1\\)"):
        read_mcpeval_tasks(path)


def test_agentbench_queries(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": 1, "query": "q?", "reference_answer": "r", "category": "Multi-Server-Parallel-Call"})
        + "\n"
        + json.dumps({"query_id": "2", "question": "q2", "answer": "r2"})
    )
    tasks = read_agentbench_tasks(path)
    assert tasks["1"].category == "multi-server/parallel-call" and tasks["2"].category is None
    assert detect_kind(path) == "agentbench"
    path.write_text(json.dumps({"id": 1, "reference_answer": "r"}))
    with pytest.raises(InputError) as info:
        read_agentbench_tasks(path)
    assert info.value.field == "query" and info.value.line == 1


def test_answers_and_labels(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"run_id": "r1", "task_id": "t1", "model": "m", "final_answer": "42", "rounds": 3})
        + "\n"
        + json.dumps({"run_id": "r2", "answer": "x"})
    )
    out = read_answers(answers)
    assert out["r1"].rounds == 3 and out["r2"].task_id == "r2" and out["r2"].model is None
    answers.write_text(json.dumps({"run_id": "r1", "final_answer": ["not", "text"]}))
    with pytest.raises(InputError) as info:
        read_answers(answers)
    assert info.value.field == "final_answer" and "expected a string" in info.value.message
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "q1", "labels": ["pass", "FAIL", None, True]}))
    assert read_labels(labels) == {"q1": [True, False, None, True]}
    labels.write_text(json.dumps({"id": "q1", "labels": ["pass", "maybe"]}))
    with pytest.raises(InputError, match=r"labels\[1\]"):
        read_labels(labels)
    assert parse_label(1) is True and parse_label("") is None


def test_unknown_format_is_explained(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="cannot tell the task format"):
        detect_kind(path)


def test_mcpeval_single_pretty_printed_object(tmp_path):
    # MCPEval's load_json turns a lone object into a one-record list; so does the reader.
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"task_id": "t9", "tool_calls": [{"tool_name": "x", "tool_parameters": {}}]}, indent=2))
    assert list(read_mcpeval_tasks(path)) == ["t9"]
    path.write_text('{"task_id": "t9",\n "tool_calls": [\n')  # broken: the JSONL error is reported
    with pytest.raises(InputError, match="one.json:1"):
        read_mcpeval_tasks(path)
