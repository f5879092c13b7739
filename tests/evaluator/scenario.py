"""A small multi-benchmark scenario on disk: call log, task files, answers, labels, catalog.

Two models (from the answers file) attempt MCP-Bench tasks, MCP-AgentBench
queries and an MCPEval task. The scripted judge passes an answer exactly when
it contains "DATA", gives every rubric dimension 7, and every aspect 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcpgw.evaluator.judges.aspects import TRAJECTORY
from mcpgw.evaluator.judges.rubric import SCORE_KEYS
from tests.evaluator.conftest import call

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def build(tmp: Path) -> dict[str, Path]:
    bad_args = {"valid": False, "errors": [{"path": "$", "message": "city missing", "keyword": "required"}]}
    calls = [
        # a-mb1: 3 calls, one unknown name (near weather__forecast), one invalid
        call("a-mb1", seq=0),
        call("a-mb1", seq=1, arguments={}, validation=bad_args, outcome="rejected"),
        call(
            "a-mb1",
            seq=2,
            known_tool=False,
            tool=None,
            server=None,
            exposed_name="weather__forecats",
            outcome="rejected",
        ),
        # b-mb1: 2 good calls, one of them isError
        call("b-mb1", seq=3, server="time", tool="now", exposed_name="time__now", arguments={}),
        call("b-mb1", seq=4, outcome="tool_error", is_error=True),
        # MCPEval runs
        call("a-e1", seq=5),
        call("b-e1", seq=6, arguments={"city": "Bergen"}),
        # MCP-AgentBench runs make calls too
        call("a-q1", seq=7),
        call("b-q1", seq=8, outcome="timeout", latency_ms=30000.0),
    ]
    files = {
        "calls": write_jsonl(tmp / "calls.jsonl", calls),
        "mcpbench": tmp / "mcpbench_tasks.json",
        "mcpeval": write_jsonl(
            tmp / "mcpeval_gt.jsonl",
            [
                {
                    "id": "e1",
                    "description": "Weather in Oslo",
                    "final_response": "Rain in Oslo",
                    "tool_calls": [{"tool_name": "forecast", "tool_parameters": {"city": "Oslo"}}],
                }
            ],
        ),
        "agentbench": write_jsonl(
            tmp / "queries.jsonl",
            [
                {
                    "id": "q1",
                    "query": "Weather in Oslo now?",
                    "reference_answer": "12C rain",
                    "category": "Single-Server-Single-Call",
                },
                {
                    "id": "q2",
                    "query": "Compare two cities",
                    "reference_answer": "Oslo 12C, Rome 25C",
                    "category": "Multi-Server-Parallel-Call",
                },
            ],
        ),
        "answers": write_jsonl(
            tmp / "answers.jsonl",
            [
                {"run_id": "a-mb1", "task_id": "mb1", "model": "model-a", "final_answer": "Yosemite", "rounds": 2},
                {"run_id": "a-mb2", "task_id": "mb2", "model": "model-a", "final_answer": "nothing found"},
                {"run_id": "b-mb1", "task_id": "mb1", "model": "model-b", "final_answer": "Joshua Tree"},
                {"run_id": "a-e1", "task_id": "e1", "model": "model-a", "final_answer": "Rain"},
                {"run_id": "b-e1", "task_id": "e1", "model": "model-b", "final_answer": "Sun"},
                {"run_id": "a-q1", "task_id": "q1", "model": "model-a", "final_answer": "DATA: 12C and rain"},
                {"run_id": "a-q2", "task_id": "q2", "model": "model-a", "final_answer": "DATA: Oslo 11C, Rome 24C"},
                {"run_id": "b-q1", "task_id": "q1", "model": "model-b", "final_answer": "Usually rainy in autumn."},
                {"run_id": "b-q2", "task_id": "q2", "model": "model-b", "final_answer": "DATA: Rome 25C"},
            ],
        ),
        "labels": write_jsonl(
            tmp / "labels.jsonl",
            [
                {"id": "a-q1", "labels": ["pass", "pass", "fail"]},
                {"id": "b-q1", "labels": ["fail", "fail", "fail"]},
                {"id": "b-q2", "labels": ["fail", "pass", "fail"]},
            ],
        ),
        "tools": tmp / "tools.json",
    }
    files["mcpbench"].write_text(
        json.dumps(
            {
                "server_tasks": [
                    {
                        "server_name": "Weather",
                        "tasks": [
                            {
                                "task_id": "mb1",
                                "task_description": "Find parks and weather",
                                "fuzzy_description": "Trip ideas?",
                                "dependency_analysis": "parks -> weather",
                                "distraction_servers": ["Math"],
                            },
                            {"task_id": "mb2", "task_description": "Another task", "fuzzy_description": "Another?"},
                        ],
                    }
                ]
            },
            indent=2,
        )
    )
    files["tools"].write_text(
        json.dumps(
            [
                {
                    "server": "weather",
                    "name": "forecast",
                    "exposed_name": "weather__forecast",
                    "description": "Forecast",
                    "inputSchema": SCHEMA,
                },
                {"server": "time", "name": "now", "exposed_name": "time__now", "inputSchema": {}},
                {
                    "server": "maps",
                    "name": "geocode",
                    "exposed_name": "maps__geocode",
                    "inputSchema": {"type": "object"},
                },
            ]
        )
    )
    return files


def judge_script(body: dict[str, Any]) -> dict[str, Any]:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "Decide whether the assistant's final answer" in prompt:
        answer = prompt.split("## Assistant's final answer", 1)[1].split("## How to grade", 1)[0]
        verdict = "pass" if "DATA" in answer else "fail"
        return {"content": json.dumps({"reasoning": "scripted", "verdict": verdict})}
    if "## Rubric" in prompt:
        return {"content": json.dumps({k: 7 for k in SCORE_KEYS})}
    if "- planning:" in prompt:
        return {"content": json.dumps({k: 0.5 for k in TRAJECTORY})}
    return {
        "content": json.dumps({"requirement_coverage": 1.0, "accuracy": 1.0, "completeness": 1.0, "usefulness": 0.0})
    }
