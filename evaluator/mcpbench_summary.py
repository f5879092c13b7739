"""MCP-Bench's saved metrics (the runner's `--output` file), checked against the gateway's call log.

The runner saves one flat object of averages per task file (`valid_tool_name_rate`,
`input_schema_compliance`, `tool_call_success_rate`, `avg_tool_calls_per_task`, the judge's scores,
timings, tokens). It holds no tasks, so it cannot be re-scored; but when the run went through the
gateway, the gateway's call log holds every call the runner made, and the same MCP-Bench rules over it
must give the same averages. This module reads such a file and compares it, field by field, with the
values computed from the call log (`mcpbench_rules`), per model.

One difference is MCP-Bench's own, and explained rather than hidden: over HTTP its runner reads the
answer of `tools/call` as a plain dict and never sees `isError`, so a tool error counts as a success
in its `tool_call_success_rate` (over stdio it does see it). When the computed rate differs only by
such calls, the comparison says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator.mcpbench_rules import counted, mean_skipping_none

# MCP-Bench's saved name -> how the call log's per-file value is named (mcpbench_rules.aggregate_tasks).
COMPARED = ("valid_tool_name_rate", "input_schema_compliance", "tool_call_success_rate", "avg_tool_calls_per_task")
_MARKERS = ("tool_call_success_rate", "valid_tool_name_rate", "task_completion_score")
TOLERANCE = 1e-9


def is_summary(data: Any) -> bool:
    """The runner's metrics file: one flat object of numbers, no per-task results."""
    return (
        isinstance(data, Mapping)
        and all(key in data for key in _MARKERS[:2])
        and not any(isinstance(v, (list, Mapping)) for v in data.values())
    )


def http_success_rate(tasks: Mapping[str, Mapping[str, Any]]) -> float:
    """`tool_call_success_rate` as MCP-Bench's HTTP transport counts it: tool errors are successes."""
    rates = [
        (row["successful_calls"] + row.get("tool_error_calls", 0)) / row["calls"] if row["calls"] else None
        for row in tasks.values()
        if counted(row)
    ]
    return mean_skipping_none(rates)


def compare(
    reported: Mapping[str, Any], computed: Mapping[str, Any], tasks: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Each compared field: what MCP-Bench saved, what the call log gives, and whether they agree."""
    fields: dict[str, Any] = {}
    for name in COMPARED:
        if not isinstance(reported.get(name), (int, float)):
            continue
        saved, mine = float(reported[name]), float(computed.get(name) or 0.0)
        row: dict[str, Any] = {"reported": saved, "call_log": mine, "agrees": abs(saved - mine) <= TOLERANCE}
        if name == "tool_call_success_rate" and not row["agrees"]:
            over_http = http_success_rate(tasks)
            if abs(saved - over_http) <= TOLERANCE:
                row.update(
                    agrees=True,
                    call_log_over_http=over_http,
                    note="MCP-Bench's HTTP transport counts tool errors (isError) as successes",
                )
        fields[name] = row
    return {"fields": fields, "agrees": all(f["agrees"] for f in fields.values()), "tasks_in_call_log": len(tasks)}
