"""Issue 53 items 1 and 3 end to end: a task repeated 3 times live against a server whose answer changes on
every call (the misbehaving server's `counter`), and 3 times replayed from one recording with the model live.
`mcpgw eval --noise` finds the live repeats' answers differed and the frozen repeats' did not: every repeat
lane missing from the recording is answered from the recording of the task."""

from __future__ import annotations

import json

from mcpgw.cli import main
from tests.conftest import misbehaving_entry
from tests.llm.scripted_model import ScriptedModel

TASKS = {"server_tasks": [{"server_name": "fx", "tasks": [{"task_id": "quick", "task_description": "QUICK: count."}]}]}
COUNT = {"tool_calls": [["fx__counter", {}]]}


def test_live_repeats_differ_and_repeats_replayed_from_one_recording_do_not(tmp_path, capsys):
    tasks, config, cassettes = tmp_path / "tasks.json", tmp_path / "fx.yaml", tmp_path / "cassettes"
    tasks.write_text(json.dumps(TASKS))
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    # Seven conversations, one at a time: 3 live repeats, 1 recording, 3 replayed repeats; each counts once.
    with ScriptedModel({("tc", "QUICK"): [COUNT, {"text": "done"}] * 7}) as model:
        common = ["run", str(tasks), "--model", "scripted-1", "--distraction-count", "0", "--concurrency", "1",
                  "--config", str(config), "--cassettes-dir", str(cassettes), "--llm-base-url", model.base_url]  # fmt: skip
        for extra in (
            ["--mode", "record", "--cassette", "live", "--repeat", "3", "--answers", str(tmp_path / "live.jsonl")],
            ["--mode", "record", "--cassette", "once", "--answers", str(tmp_path / "once.jsonl")],
            ["--mode", "replay", "--cassette", "once", "--log-cassette", "frozen", "--model-mode", "live",
             "--repeat", "3", "--answers", str(tmp_path / "frozen.jsonl")],
        ):  # fmt: skip
            assert main([*common, *extra]) == 0, capsys.readouterr().err
    out = tmp_path / "noise.json"
    code = main(["eval", "--noise", "live", "frozen", "--cassettes-dir", str(cassettes), "--json", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    row = report["noise"]["tasks"]["quick"]
    assert (row["repeated_calls"], row["differed"], row["frozen_differed"]) == (1, 1, 0), row
    assert row["examples"] == ["fx__counter({})"]
    for side in ("live", "frozen"):
        assert report["sides"][side]["models"]["scripted-1/tc"]["tasks"]["quick"]["runs"] == [
            "quick#1",
            "quick#2",
            "quick#3",
        ]
