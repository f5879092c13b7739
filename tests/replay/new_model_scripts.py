"""Model A and model B on one recorded environment (tests/replay/test_new_model.py, bench/bench_new_model.py).

Four MCP-AgentBench-style queries over Unit Converter, Medical Calculator (a schema default: height_unit
"cm"), Math MCP and the stateful memory server. Model A is recorded; model B repeats some of A's calls
exactly, spells out a default A left out (equivalent), asks novel questions of stateless servers (simulated,
or live) and makes a novel state-changing call on the memory server (never simulated: refused)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUERIES = {
    "reactor": "Convert the Reactor X coolant temperature of 350 F to Celsius.",
    "patient": "Give the BMI of the multidisciplinary rounds patient: 70 kg, 175 cm.",
    "memory": "Remember the project lead Alice, then tell me what you know.",
    "drone": "Convert the drone test flight temperature of 59 F to Celsius.",
    "sum": "Add the fuel loads 12 and 30 with the math tools.",
}
MARKERS = {
    "reactor": "Reactor X",
    "patient": "multidisciplinary rounds",
    "memory": "project lead Alice",
    "drone": "drone test flight",
    "sum": "fuel loads",
}

ALICE = {"entities": [{"name": "Alice", "entityType": "person", "observations": ["project lead"]}]}
BOB = {"entities": [{"name": "Bob", "entityType": "person", "observations": ["project lead"]}]}


def temperature(value: float) -> dict[str, Any]:
    return {"value": value, "from_unit": "fahrenheit", "to_unit": "celsius"}


A_CALLS: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {
    "reactor": [[("unit_converter__convert_temperature", temperature(350))]],
    "patient": [[("medical_calculator__bmi_bsa_calculator", {"weight": 70, "height": 175})]],
    "memory": [[("memory__create_entities", ALICE)], [("memory__read_graph", {})]],
    "drone": [[("unit_converter__convert_temperature", temperature(59))]],
    "sum": [[("math_mcp__add", {"firstNumber": 12, "secondNumber": 30})]],
}
B_CALLS: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {
    "reactor": A_CALLS["reactor"],  # recorded
    "patient": [
        [("medical_calculator__bmi_bsa_calculator", {"height": 175, "weight": 70.0, "height_unit": "cm"})]
    ],  # equivalent
    "memory": [[("memory__create_entities", BOB)], [("memory__read_graph", {})]],  # stateful and novel: refused
    "drone": [[("unit_converter__convert_temperature", temperature(60))]],  # novel, stateless: simulated (or live)
    "sum": [[("math_mcp__add", {"firstNumber": 12, "secondNumber": 31})]],  # novel, stateless: simulated (or live)
}
# What each of B's calls is answered from, per task (with --on-miss simulate)
B_SOURCES = {
    "reactor": ["recorded"],
    "patient": ["equivalent"],
    "memory": ["missed", "missed"],
    "drone": ["simulated"],
    "sum": ["simulated"],
}


def model_script(calls: dict[str, list[list[tuple[str, dict[str, Any]]]]], who: str) -> dict:
    script = {}
    for task, rounds in calls.items():
        steps: list[dict[str, Any]] = [{"tool_calls": [[n, a] for n, a in r]} for r in rounds]
        script[("tc", MARKERS[task])] = steps + [{"text": f"Model {who} on {task}: done."}]
    return script


def simulator_script() -> dict:
    """The simulator's answers, by the tool its request is about (its prompt names it)."""

    def result(structured: dict[str, Any]) -> dict[str, Any]:
        return {
            "text": json.dumps(
                {
                    "content": [{"type": "text", "text": json.dumps(structured)}],
                    "structuredContent": structured,
                    "isError": False,
                }
            )
        }

    return {
        ("mcpbench", "convert_temperature"): [
            result(
                {
                    "original_value": 60.0,
                    "original_unit": "fahrenheit",
                    "converted_value": 15.5556,
                    "converted_unit": "celsius",
                    "conversion_type": "temperature",
                }
            )
        ],
        ("mcpbench", "Adds two numbers"): [{"text": "43"}],
    }


def write_queries(path: Path) -> Path:
    path.write_text(
        json.dumps(
            [
                {"id": task, "query": query, "reference_answer": f"the answer to {task}", "category": "single"}
                for task, query in QUERIES.items()
            ]
        )
    )
    return path
