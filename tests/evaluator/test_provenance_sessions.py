"""Issue 50, item 7: `mcpgw eval --tasks-by session` leaves out a task with a simulated answer whole.

MCP-Bench's runner opens a session per server of a task, all before the task's first call, so a 2-server task
is two sessions of one task (evaluator.calllog.group_by_run). A simulated answer in one of them leaves the
task out of `real_environment`: all of its sessions, not the one the task is named after (its other session
used to come back as a task of its own, its simulated answer included).
"""

from __future__ import annotations

import json
import subprocess
import sys

from mcpgw.cassette.store import CassetteStore
from mcpgw.evaluator.pipeline import EvalInputs, evaluate
from tests.conftest import ROOT
from tests.evaluator.conftest import call


def _at(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}+00:00"


def calls() -> list[dict]:
    """Three tasks of run `mb`: a 2-server task (sessions s-a, s-b opened together; s-b's second answer
    simulated), then two one-server tasks of two calls each, one of which errs."""
    rows = [
        ("s-a", "alpha", 0, 2, "recorded", "ok"),
        ("s-a", "alpha", 0, 3, "recorded", "ok"),
        ("s-b", "beta", 1, 4, "recorded", "ok"),
        ("s-b", "beta", 1, 5, "simulated", "ok"),
        ("s-c", "alpha", 10, 11, "recorded", "ok"),
        ("s-c", "alpha", 10, 12, "recorded", "upstream_error"),
        ("s-d", "beta", 20, 21, "recorded", "ok"),
        ("s-d", "beta", 20, 22, "live", "upstream_error"),
    ]
    return [
        call(
            "mb",
            seq=n,
            session_id=session,
            server=server,
            tool="t",
            exposed_name=f"{server}__t",
            session_opened=_at(opened),
            started_at=_at(started),
            source=source,
            outcome=outcome,
            is_error=outcome != "ok",
        )
        for n, (session, server, opened, started, source, outcome) in enumerate(rows)
    ]


def check(report: dict) -> None:
    found = report["provenance"]
    assert set(found["tasks"]) == {"mb/s-a", "mb/s-c", "mb/s-d"}
    assert found["simulated_tasks"] == ["mb/s-a"]
    real = report["real_environment"]
    assert real["tasks_left_out"] == ["mb/s-a"]
    (rules,) = real["mcpbench_rules"].values()
    assert sorted(rules["tasks"]) == ["mb/s-c", "mb/s-d"]  # 2 tasks, not 3 (s-b is not a task of its own)
    servers = real["servers"]
    assert sum(s["calls"] for s in servers.values()) == 4
    assert sum(s["ok"] for s in servers.values()) / 4 == 0.5
    assert {name: (s["calls"], s["success"]) for name, s in servers.items()} == {"alpha": (2, 0.5), "beta": (2, 0.5)}


def test_a_left_out_task_leaves_out_all_of_its_sessions():
    check(evaluate(EvalInputs(calls=calls(), tasks_by="session")))


def test_the_same_through_mcpgw_eval_on_a_call_log(tmp_path):
    log = tmp_path / "log"
    store = CassetteStore(log)  # a call log as the gateway keeps it
    for record in calls():
        store.append("calls", record)
    store.close()
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "eval",
            "--cassette",
            str(log),
            "--tasks-by",
            "session",
            "--format",
            "json",
            "-o",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    check(json.loads(out.read_text()))
