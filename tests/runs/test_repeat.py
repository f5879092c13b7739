"""Issue 53 item 1: `mcpgw run --repeat K` runs each task K times, each repeat a run of its own named
`<prefix><task id>#<i>`, and `mcpgw eval --run` groups them as repeats of the task. Harness tags of the
same shape (`mcpgw connect --run ID#i`) reach the gateway whole: `#` is percent-encoded in `?run=`."""

from __future__ import annotations

import json

from mcpgw.cli import main
from mcpgw.gateway.sessions.run_ids import from_query
from mcpgw.harness.configs import endpoint, run_query
from mcpgw.recorder.calllog import iter_calls
from mcpgw.runs.tasks import RunTask, repeated, run_base
from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel

TASKS = {"server_tasks": [{"server_name": "fx", "tasks": [{"task_id": "quick", "task_description": "QUICK: echo."}]}]}
ECHO = {"tool_calls": [["fx__echo", {"message": "hi"}]]}


def test_repeats_are_runs_named_with_their_number_and_once_is_unchanged():
    task = RunTask("t1", "do it", None, "mcpeval", "f.jsonl")
    runs = repeated([task, RunTask("t2", "x", None, "mcpeval", "f.jsonl")], 3)
    assert [run_base("react/", t) for t in runs] == [f"react/t{n}#{i}" for n in (1, 2) for i in (1, 2, 3)]
    assert {t.task_id for t in runs} == {"t1", "t2"}  # the task stays the task: its answers name it
    assert repeated([task], 1) == [task] and run_base("react/", task) == "react/t1"


def test_a_repeat_tag_is_percent_encoded_for_the_gateway_and_read_back_whole():
    assert run_query("mcpbench/t1#2") == "?run=mcpbench%2Ft1%232"
    assert endpoint("fx", "t1#2").endswith("/mcp?run=t1%232")
    assert from_query(run_query("mcpbench/t1#2")[1:].encode()) == "mcpbench/t1#2"


def test_run_repeat_records_each_repeat_and_eval_groups_them(tmp_path, capsys):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    # Conversations in turn (one task in flight at a time): repeats 1 and 3 call the tool, repeat 2 does not.
    script = {("tc", "QUICK"): [ECHO, {"text": "done"}, {"text": "skipped"}, ECHO, {"text": "done"}]}
    model = ScriptedModel(script).start()
    gateway = start_gateway(
        tmp_path,
        "version: 1\nservers:\n" + misbehaving_entry("fx"),
        "--mode",
        "record",
        "--llm-base-url",
        model.base_url,
    )
    answers = tmp_path / "answers.jsonl"
    try:
        code = main(
            ["run", str(tasks), "--model", "scripted-1", "--gateway", gateway.base, "--distraction-count", "0",
             "--repeat", "3", "--concurrency", "1", "--answers", str(answers)]
        )  # fmt: skip
        assert code == 0, capsys.readouterr().err
        assert main(["run", str(tasks), "--model", "m", "--gateway", gateway.base, "--repeat", "0"]) == 2
        assert "--repeat 0: how many times" in capsys.readouterr().err
    finally:
        stop_gateway(gateway)
        model.stop()
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [(r["run_id"], r["task_id"], r["repeat"]) for r in rows] == [(f"quick#{i}", "quick", i) for i in (1, 2, 3)]
    cassette = tmp_path / "cassettes" / "test"
    tool_runs = [c["run_id"] for c in iter_calls(cassette) if c["server"] == "fx"]
    assert tool_runs == ["quick#1", "quick#3"]  # each repeat in its own lane, `#` and all
    out = tmp_path / "report.json"
    assert main(["eval", "--run", str(cassette), "--success", "mcpbench.calls>=1", "--json", "-o", str(out)]) == 0
    section = json.loads(out.read_text())["stability"]
    task = section["models"]["scripted-1/tc"]["tasks"]["quick"]
    assert task["runs"] == ["quick#1", "quick#2", "quick#3"]
    outcome = task["outcomes"]["mcpbench.calls>=1"]
    assert (outcome["values"], outcome["flips"]) == ([True, False, True], True)
    assert outcome["pass^k"][1] == 1 / 3  # C(2,2)/C(3,2)
