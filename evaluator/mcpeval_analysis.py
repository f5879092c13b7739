"""The detail sections of MCPEval's analyzer report (`parameter_mismatches`, `tool_usage`,
`success_patterns`), from the per-task matches of `mcpeval_match`, counted by the analyzer's rules:

- parameter_mismatches: per call key (the tool name, `name_i` when the ground truth repeats it), how many
  tasks had each parameter differ (strict matching);
- tool_usage: tool names counted over every ground-truth call, every predicted call, and the strict
  match's missing and extra tool lists;
- success_patterns: tasks that succeeded or failed, strict and flexible, by their number of ground-truth
  calls and by their tool combination ("2x a, 1x b", tools in first-call order, most frequent first), and
  per ground-truth tool the share of the tasks using it that succeeded under strict matching.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

MODES = ("strict", "flexible")


def parameter_mismatches(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, Counter[str]] = {}
    for row in tasks.values():
        for key, params in row["param_mismatches"].items():
            out.setdefault(key, Counter()).update(params.keys())
    return {key: dict(counts) for key, counts in out.items()}


def tool_usage(
    tasks: Mapping[str, Mapping[str, Any]],
    truth: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, dict[str, int]]:
    usage = {
        "ground_truth_tools": Counter(),
        "prediction_tools": Counter(),
        "missing_tools": Counter(),
        "extra_tools": Counter(),
    }
    for task_id, row in tasks.items():
        usage["ground_truth_tools"].update(c["tool_name"] for c in truth[task_id])
        usage["prediction_tools"].update(c["tool_name"] for c in predictions[task_id])
        usage["missing_tools"].update(row["missing_tools"])
        usage["extra_tools"].update(row["extra_tools"])
    return {name: dict(counts) for name, counts in usage.items()}


def success_patterns(
    tasks: Mapping[str, Mapping[str, Any]], truth: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    by_count = {m: {"success": Counter(), "failure": Counter()} for m in MODES}
    by_combo = {m: {"success": Counter(), "failure": Counter()} for m in MODES}
    per_tool: dict[str, list[int]] = {}  # tool -> [successful tasks, tasks] under strict matching
    for task_id, row in tasks.items():
        names = [c["tool_name"] for c in truth[task_id]]
        combo = ", ".join(f"{n}x {tool}" for tool, n in Counter(names).items())
        for mode in MODES:
            outcome = "success" if row[mode]["success"] else "failure"
            for side in ("success", "failure"):  # a count seen in a mode is listed on both sides, 0 or not
                by_count[mode][side][len(names)] += 0
            by_count[mode][outcome][len(names)] += 1
            by_combo[mode][outcome][combo] += 1
        for tool in names:  # once per call, as the analyzer counts them
            tally = per_tool.setdefault(tool, [0, 0])
            tally[0] += row["strict"]["success"]
            tally[1] += 1
    return {
        "by_tool_count": {m: {s: dict(sorted(c.items())) for s, c in sides.items()} for m, sides in by_count.items()},
        "by_tool_combination": {
            m: {s: dict(sorted(c.items(), key=lambda kv: -kv[1])) for s, c in sides.items()}
            for m, sides in by_combo.items()
        },
        "by_tool": {
            tool: {"success_rate": ok / total, "total_tasks": total, "successful_tasks": ok}
            for tool, (ok, total) in per_tool.items()
        },
    }


def analysis(
    tasks: Mapping[str, Mapping[str, Any]],
    truth: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, Any]:
    return {
        "parameter_mismatches": parameter_mismatches(tasks),
        "tool_usage": tool_usage(tasks, truth, predictions),
        "success_patterns": success_patterns(tasks, truth),
    }
