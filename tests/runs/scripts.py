"""Scripted model replies for the MCP-Bench single-server tasks of the offline servers,
one conversation per (strategy, task), built from one plan per task: rounds of tool calls,
then a final answer. The markers are phrases of each task's fuzzy description."""

from __future__ import annotations

import json
from typing import Any

# Order matters: a request belongs to the first marker found in it ("Los Angeles, New York,
# London and Tokyo" also holds "New York, London and Tokyo").
PLANS: dict[str, tuple[str, list[list[tuple[str, dict[str, Any]]]]]] = {
    "Reactor X": (
        "unit_converter_000",
        [[("unit_converter__convert_temperature", {"value": 350, "from_unit": "fahrenheit", "to_unit": "celsius"})]],
    ),
    "drone test flight": (
        "unit_converter_001",
        [[("unit_converter__convert_temperature", {"value": 59, "from_unit": "fahrenheit", "to_unit": "celsius"})]],
    ),
    "multidisciplinary rounds": (
        "medical_calculator_000",
        [[("medical_calculator__bmi_bsa_calculator", {"weight": 70, "height": 175})]],
    ),
    "hip replacement": (
        "medical_calculator_001",
        [[("medical_calculator__bmi_bsa_calculator", {"weight": 95, "height": 175})]],
    ),
    "two 3×3 matrices": (
        "scientific_computing_000",
        [
            [("scientific_computing__create_tensor", {"shape": [2, 2], "values": [4, 7, 2, 6], "name": "A"})],
            [("scientific_computing__determinant", {"name": "A"})],
        ],
    ),
    "3D Gaussian": (
        "scientific_computing_001",
        [
            [("scientific_computing__create_tensor", {"shape": [2, 2], "values": [2, 0.3, 0.3, 1], "name": "S"})],
            [("scientific_computing__determinant", {"name": "S"})],
        ],
    ),
    "Los Angeles": (
        "time_mcp_001",
        [
            [
                (
                    "time_mcp__convert_time",
                    {"source_timezone": "America/Los_Angeles", "time": "09:00", "target_timezone": "Asia/Tokyo"},
                )
            ]
        ],
    ),
    "New York, London and Tokyo": (
        "time_mcp_000",
        [
            [
                (
                    "time_mcp__convert_time",
                    {"source_timezone": "America/New_York", "time": "09:00", "target_timezone": "Asia/Tokyo"},
                ),
                (
                    "time_mcp__convert_time",
                    {"source_timezone": "Europe/London", "time": "09:00", "target_timezone": "Asia/Tokyo"},
                ),
            ]
        ],
    ),
}
TASK_IDS = [task_id for task_id, _ in PLANS.values()]


def final(marker: str) -> str:
    return f"Report for {marker}: every figure above was computed with the tools."


def tc_steps(marker: str, rounds: list) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"tool_calls": [[n, a] for n, a in r]} for r in rounds]
    if marker == "Reactor X":  # a malformed call first: the agent is told, and calls again
        name, args = rounds[0][0]
        steps.insert(0, {"tool_calls": [[name, json.dumps(args)[:-3]]]})
    if marker == "hip replacement":  # the endpoint fails once: retried, and replayed the same way
        steps.insert(0, {"status": 500})
    return steps + [{"text": final(marker)}]


def react_steps(marker: str, rounds: list) -> list[dict[str, Any]]:
    steps = [
        {"text": f"Thought: I need {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"}
        for r in rounds
        for name, args in r
    ]
    return steps + [{"text": f"Thought: I have everything.\nFinal Answer: {final(marker)}"}]


def mcpbench_steps(marker: str, rounds: list) -> list[dict[str, Any]]:
    plans = [
        {
            "text": json.dumps(
                {
                    "reasoning": f"round {i}",
                    "should_continue": True,
                    "planned_tools": [{"tool": n, "parameters": a} for n, a in r],
                }
            )
        }
        for i, r in enumerate(rounds, 1)
    ]
    done = {"text": json.dumps({"reasoning": "enough", "should_continue": False, "planned_tools": []})}
    return plans + [done, {"text": final(marker)}]


def script() -> dict[tuple[str, str], list[dict[str, Any]]]:
    out = {}
    for strategy, build in (("tc", tc_steps), ("react", react_steps), ("mcpbench", mcpbench_steps)):
        for marker, (_, rounds) in PLANS.items():
            out[(strategy, marker)] = build(marker, rounds)
    return out
