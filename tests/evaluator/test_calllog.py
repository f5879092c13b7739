import json

import pytest

from mcpgw.evaluator.calllog import check_calls, group_by_run, read_calls
from mcpgw.evaluator.errors import InputError
from tests.evaluator.conftest import call


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" if not isinstance(r, str) else r + "\n" for r in records))
    return path


def test_reads_and_groups_by_run_in_seq_order(tmp_path):
    path = write_jsonl(
        tmp_path / "calls.jsonl",
        [call("a", seq=2, tool="t2"), call("b", seq=1), "", call("a", seq=0, tool="t0"), call(7, seq=3)],
    )
    runs = group_by_run(read_calls(path))
    assert list(runs) == ["a", "b", "7"]  # numeric run ids become strings
    assert [c["tool"] for c in runs["a"]] == ["t0", "t2"]
    assert len(runs["b"]) == 1


def test_keeps_file_order_when_there_is_no_seq(tmp_path):
    records = [call("a", seq=None, tool="second"), call("a", seq=None, tool="first")]
    runs = group_by_run(check_calls(records))
    assert [c["tool"] for c in runs["a"]] == ["second", "first"]


def test_fills_defaults_for_known_tool_and_is_error():
    record = call()
    del record["known_tool"], record["is_error"]
    record["outcome"] = "tool_error"
    checked = next(check_calls([record]))
    assert checked["known_tool"] is True and checked["is_error"] is True
    unknown = call(tool=None, outcome="rejected")
    del unknown["known_tool"]
    assert next(check_calls([unknown]))["known_tool"] is False


@pytest.mark.parametrize(
    "line, field, problem",
    [
        ("not json at all", None, "not valid JSON"),
        ("[1, 2]", None, "expected a call record"),
        (json.dumps({**call(), "run_id": None}), "run_id", "missing"),
        (json.dumps({**call(), "outcome": "exploded"}), "outcome", "'exploded' is not one of"),
        (json.dumps({**call(), "exposed_name": 3}), "exposed_name", "expected a string"),
        (json.dumps({**call(), "is_error": "no"}), "is_error", "expected true or false"),
        (json.dumps({**call(), "latency_ms": "fast"}), "latency_ms", "expected a number"),
        (json.dumps({**call(), "validation": {"valid": "yes"}}), "validation.valid", "expected true, false or null"),
        (
            json.dumps({**call(), "validation": {"valid": False, "errors": ["x"]}}),
            "validation.errors[0]",
            "expected an object",
        ),
    ],
)
def test_bad_line_names_file_line_and_field(tmp_path, line, field, problem):
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(call()) + "\n\n" + line + "\n")
    with pytest.raises(InputError) as info:
        list(read_calls(path))
    error = info.value
    assert error.source == str(path) and error.line == 3 and error.field == field
    assert problem in error.message and f"{path}:3" in error.message


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        list(read_calls(tmp_path / "nope.jsonl"))


def test_iterable_source_names_position():
    with pytest.raises(InputError) as info:
        list(check_calls([call(), {"run_id": "x"}], source="cassette c"))
    assert info.value.line == 2 and info.value.source == "cassette c" and info.value.field == "outcome"


def test_model_exchanges_in_a_call_log_are_not_tool_calls(tmp_path):
    tool = {"run_id": "t1", "outcome": "ok", "exposed_name": "uc__convert", "server": "uc", "tool": "convert"}
    model = {
        "run_id": "t1",
        "outcome": "hit",
        "exposed_name": None,
        "server": "@model",
        "method": "/v1/chat/completions",
    }
    assert list(check_calls([model, tool, model])) == [tool]
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (model, tool)) + "\n")
    assert [r["exposed_name"] for r in read_calls(path)] == ["uc__convert"]


def _at(second: int) -> str:
    return f"2025-01-01T00:00:{second:02d}.000+00:00"


def test_tasks_by_session_merges_the_sessions_a_task_opened_together():
    """MCP-Bench's runner: every server of a task gets a session, all opened before the task's first call; a
    multi-server task that calls one server in round 1 and the other in round 2 is still one task."""
    records = [
        # task 1: sessions s-a and s-b (and an uncalled distraction) opened at 0-1 s; s-a called in round 1, s-b in round 2
        call("mb", seq=0, session_id="s-a", server="alpha", session_opened=_at(0), started_at=_at(2)),
        call("mb", seq=1, session_id="s-a", server="alpha", session_opened=_at(0), started_at=_at(3)),
        call("mb", seq=2, session_id="s-b", server="beta", session_opened=_at(1), started_at=_at(5)),
        # task 2: a fresh session on alpha, opened after task 1's calls
        call("mb", seq=3, session_id="s-c", server="alpha", session_opened=_at(8), started_at=_at(9)),
        # an older log's session (no session_opened) stays a task of its own
        call("mb", seq=4, session_id="s-old", server="beta", started_at=_at(10)),
        call("other", seq=5, session_id="s-x", server="beta", session_opened=_at(1), started_at=_at(6)),
    ]
    tasks = group_by_run(check_calls(records), "session")
    assert list(tasks) == ["mb/s-a", "mb/s-c", "mb/s-old", "other/s-x"]
    assert [c["seq"] for c in tasks["mb/s-a"]] == [0, 1, 2] and {c["server"] for c in tasks["mb/s-a"]} == {
        "alpha",
        "beta",
    }
    assert [c["seq"] for c in tasks["mb/s-c"]] == [3]
    assert list(group_by_run(check_calls(records))) == ["mb", "other"]  # by run: unchanged
