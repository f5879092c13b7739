"""MCPEval's results file checked against the gateway's call log, and why a call log alone gives no
MCPEval section.

MCPEval's evaluator runs every task through one MCP session, so the call log cannot tell its tasks apart
(one run, not one per task id): its per-task predictions come from the results file it writes. What the
call log can still say is whether that file reports the calls that really reached the servers: the same
number of calls, of the same tools.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator import names
from mcpgw.evaluator.tasks import McpEvalTask


def crosscheck(
    prediction_sets: list[dict[str, McpEvalTask]], calls: list[dict[str, Any]], titles: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """{"files": {path: calls in it}, "calls_in_files", "calls_logged", "agrees", "only_in_files", "only_logged"}
    and a warning when the files and the call log disagree (tool calls counted by tool name)."""
    in_files: Counter[str] = Counter()
    per_file: Counter[str] = Counter()
    for predictions in prediction_sets:
        for task in predictions.values():
            for call in task.tool_calls:
                in_files[names.bare_tool(str(call.get("tool_name")), titles)] += 1
                per_file[task.source or "predictions"] += 1
    logged = Counter(str(r.get("tool") or names.bare_tool(str(r.get("exposed_name")), titles)) for r in calls)
    total_files, total_logged = sum(in_files.values()), sum(logged.values())
    only_files, only_logged = dict(in_files - logged), dict(logged - in_files)
    out = {
        "files": dict(per_file),
        "calls_in_files": total_files,
        "calls_logged": total_logged,
        "agrees": not only_files and not only_logged,
        "only_in_files": only_files,
        "only_logged": only_logged,
    }
    said = f"{total_files} calls in the results file(s), {total_logged} logged"
    out["summary"] = said
    if out["agrees"]:
        return out, []
    return out, [
        f"MCPEval's results and the call log differ: {said} (only in the files: {only_files or 'none'}; "
        f"only logged: {only_logged or 'none'}; mcpeval_crosscheck)"
    ]


def no_task_runs(path: str, task_ids: list[str], runs: list[str]) -> str:
    """Why a call log alone left the MCPEval section of `path` empty, and what to give instead."""
    shown = ", ".join(repr(r) for r in sorted(runs)[:3]) + (", ..." if len(runs) > 3 else "")
    return (
        f"{path}: none of the call log's {len(runs)} run(s) ({shown or 'none'}) is one of its {len(task_ids)} "
        "task ids, so its MCPEval section is empty: MCPEval's evaluator runs all its tasks in one MCP session, "
        "which the call log holds as one run; give the results file its evaluator wrote (--results) to score "
        "its predictions, which eval checks against the call log (mcpeval_crosscheck)"
    )
