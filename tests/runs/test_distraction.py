"""MCP-Bench's offer per task, in `mcpgw run`: the task's servers, the resident one, and
distraction servers (the task file's list, else a seeded draw from what the gateway serves);
the fuzzy description as the prompt unless --detailed-description."""

from __future__ import annotations

import json
import os
import re

import pytest

from mcpgw.cli import main
from mcpgw.recorder.calllog import iter_calls
from mcpgw.runs.distraction import draw, offered_servers
from mcpgw.runs.gateway_process import GatewayProcess
from mcpgw.runs.tasks import RunTask
from mcpgw.runs.tools import ServerNames
from tests.conftest import ROOT
from tests.llm.scripted_model import ScriptedModel

TITLES = {
    "unit_converter": "Unit Converter",
    "time_mcp": "Time MCP",
    "medical_calculator": "Medical Calculator",
    "memory": "Memory",
    "sequential_thinking": "Sequential Thinking",
    "time": "Time",
}
NAMES = ServerNames(TITLES)


def task(task_id: str = "t", distraction: list[str] | None = None) -> RunTask:
    return RunTask(task_id, "do it", {"Unit Converter"}, "mcpbench", "f.json", ("Time MCP",), distraction or [])


def test_the_draw_is_seeded_per_task_and_leaves_out_the_tasks_own_servers():
    offered = offered_servers(task(), NAMES, count=2, seed=7)
    assert offered >= {"Unit Converter", "Time MCP"} and len(offered) == 4
    drawn = offered - {"Unit Converter", "Time MCP"}
    assert drawn <= {"medical_calculator", "memory", "sequential_thinking", "time"}
    assert offered_servers(task(), NAMES, count=2, seed=7) == offered  # same seed, same draw
    # Different seeds (or tasks) draw differently: of 6 possible pairs, 8 seeds do not all agree.
    assert len({frozenset(draw("t", NAMES, {"Unit Converter", "Time MCP"}, 2, s)) for s in range(8)}) > 1
    assert len({frozenset(draw(f"t{i}", NAMES, {"Unit Converter", "Time MCP"}, 2, 7)) for i in range(8)}) > 1
    # The gateway's order of servers does not matter.
    shuffled = ServerNames(dict(reversed(list(TITLES.items()))))
    assert offered_servers(task(), shuffled, count=2, seed=7) == offered


def test_the_task_files_list_wins_the_count_caps_the_draw_and_zero_turns_distraction_off():
    assert offered_servers(task(distraction=["Memory"]), NAMES, count=2, seed=7) == {
        "Unit Converter",
        "Time MCP",
        "Memory",
    }
    assert len(offered_servers(task(), NAMES, count=10, seed=7)) == 6  # MCP-Bench's default: every other server here
    assert offered_servers(task(distraction=["Memory"]), NAMES, count=0, seed=7) == {"Unit Converter", "Time MCP"}
    none = RunTask("q", "ask", None, "agentbench", "q.jsonl")
    assert offered_servers(none, NAMES, count=2, seed=7) is None  # other benchmarks: every served server


TASKS = {
    "server_tasks": [
        {
            "server_name": "Unit Converter",
            "servers": ["Unit Converter"],
            "tasks": [
                {
                    "task_id": "drawn_000",
                    "task_description": "DETAILED-ONE: convert 350 F to C.",
                    "fuzzy_description": "FUZZY-ONE: how hot is that reactor in proper units?",
                },
                {
                    "task_id": "named_000",
                    "task_description": "DETAILED-TWO: convert 1 mile to km.",
                    "fuzzy_description": "FUZZY-TWO: how far is that in real units?",
                    "distraction_servers": ["Memory", "Weather Data"],
                },
            ],
        }
    ]
}


def done_then_answer(times: int, first_call: tuple[str, dict] | None = None) -> list[dict]:
    plan = {"reasoning": "enough", "should_continue": False, "planned_tools": []}
    steps = []
    for _ in range(times):
        if first_call:
            steps.append(
                {
                    "text": json.dumps(
                        {
                            "reasoning": "look",
                            "should_continue": True,
                            "planned_tools": [{"tool": first_call[0], "parameters": first_call[1]}],
                        }
                    )
                }
            )
        steps += [{"text": json.dumps(plan)}, {"text": "the answer"}]
    return steps


def offered_prefixes(model: ScriptedModel, marker: str) -> list[set[str]]:
    """Per planning conversation's first prompt holding `marker`: the server prefixes of its tool catalog."""
    out = []
    for seen in model.seen:
        text = seen["body"]["messages"][0]["content"]
        if marker in text and text.startswith("You are working on a task") and "(nothing yet)" in text:
            # Catalog lines are "- <server>__<tool>: description"; descriptions may hold "- x: " lines too.
            out.append({name.split("__")[0] for name in re.findall(r"^- (\w+?)__\w+: ", text, re.M)} & set(TITLES))
    return out


@pytest.mark.real
def test_mcpbench_tasks_offer_resident_and_distraction_servers_through_the_gateway(tmp_path):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    model = ScriptedModel(
        {
            ("mcpbench", "FUZZY-ONE"): done_then_answer(3),
            ("mcpbench", "DETAILED-ONE"): done_then_answer(1),
            ("mcpbench", "FUZZY-TWO"): done_then_answer(1, ("memory__read_graph", {})),
        }
    ).start()
    gateway = GatewayProcess(
        [
            "--mode",
            "record",
            "--config",
            str(ROOT / "servers.lock.yaml"),
            "--servers",
            *TITLES,
            "--cassettes-dir",
            str(tmp_path),
            "--cassette",
            "rec",
            "--llm-base-url",
            model.base_url,
        ],
        tmp_path / "gateway.log",
        env=dict(os.environ),
    )

    def run(prefix: str, task_id: str, *more: str) -> None:
        assert (
            main(
                [
                    "run",
                    str(tasks),
                    "--model",
                    "scripted-1",
                    "--strategy",
                    "mcpbench",
                    "--gateway",
                    gateway.base,
                    "--run-prefix",
                    prefix,
                    "--task-id",
                    task_id,
                    "--answers",
                    str(tmp_path / f"{prefix}.jsonl"),
                    "--distraction-count",
                    "2",
                    *more,
                ]
            )
            == 0
        )

    try:
        run("a", "drawn_000", "--distraction-seed", "1")
        run("b", "drawn_000", "--distraction-seed", "1")
        seeds = [
            s
            for s in range(2, 12)
            if draw("drawn_000", NAMES, {"Unit Converter", "Time MCP"}, 2, s)
            != draw("drawn_000", NAMES, {"Unit Converter", "Time MCP"}, 2, 1)
        ]
        run("c", "drawn_000", "--distraction-seed", str(seeds[0]))
        run("d", "drawn_000", "--detailed-description")
        run("e", "named_000")
    finally:
        gateway.stop()
        model.stop()
    first, again, other = offered_prefixes(model, "FUZZY-ONE")
    assert {"unit_converter", "time_mcp"} < first and len(first) == 4  # its server, the resident, two drawn
    assert first == again and other != first and {"unit_converter", "time_mcp"} < other and len(other) == 4
    assert first - {"unit_converter", "time_mcp"} == set(draw("drawn_000", NAMES, {"Unit Converter", "Time MCP"}, 2, 1))
    # Fuzzy by default (runs a, b, c); --detailed-description (run d): the concrete text instead, never both.
    assert len(offered_prefixes(model, "DETAILED-ONE")) == 1
    texts = [s["body"]["messages"][0]["content"] for s in model.seen]
    assert not any("FUZZY-ONE" in t and "DETAILED-ONE" in t for t in texts)
    assert offered_prefixes(model, "FUZZY-TWO") == [
        {"unit_converter", "time_mcp", "memory"}
    ]  # the file's list (as served)
    calls = [r for r in iter_calls(tmp_path / "rec") if r["run_id"] == "enamed_000" and r["server"] == "memory"]
    assert [(c["tool"], c["outcome"]) for c in calls] == [("read_graph", "ok")]  # a distraction call, via the gateway
