"""Turning a run's call records into the short text a judge reads.

Traces can be long (MCP-Bench agents average dozens of calls per task), so
each call becomes one line with its arguments cut to a few hundred
characters, and a trace over the budget keeps its head and tail with a note
of how many calls were left out. Results are not in the call log (only their
digest) unless the gateway kept them (`--log-results`, on for `mcpgw run`): then
the judge sees what each call returned too, cut short.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any


def _short_json(value: Any, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_line(record: Mapping[str, Any], index: int, arg_limit: int = 300) -> str:
    name = record.get("exposed_name") or record.get("tool") or "?"
    outcome = record.get("outcome", "?")
    if outcome == "ok" and record.get("is_error"):
        outcome = "tool_error"
    problems = ""
    validation = record.get("validation") or {}
    if validation.get("valid") is False:
        paths = [f"{e.get('path')}: {e.get('keyword')}" for e in (validation.get("errors") or [])[:3]]
        problems = f" [invalid arguments: {'; '.join(paths)}]"
    line = f"{index}. {name}({_short_json(record.get('arguments'), arg_limit)}) -> {outcome}{problems}"
    result = record.get("result")  # kept when the gateway logs results (`--log-results`; on for `mcpgw run`)
    if isinstance(result, str) and result:
        text = " ".join(result.split())
        line += "\n   returned: " + (text if len(text) <= 2 * arg_limit else text[: 2 * arg_limit - 3] + "...")
    return line


def render_trace(calls: Sequence[Mapping[str, Any]], budget: int = 12000, arg_limit: int = 300) -> str:
    if not calls:
        return "(no tool calls)"
    lines = [call_line(c, i, arg_limit) for i, c in enumerate(calls, 1)]
    text = "\n".join(lines)
    if len(text) <= budget:
        return text
    head, tail, used = [], [], 0
    for a, b in zip(lines, reversed(lines)):
        if used + len(a) + len(b) + 2 > budget - 80 or len(head) + len(tail) + 2 > len(lines):
            break
        head.append(a)
        tail.append(b)
        used += len(a) + len(b) + 2
    omitted = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"... ({omitted} calls omitted to fit the judge's context) ...", *reversed(tail)])


def render_calls(calls: Sequence[Mapping[str, Any]], arg_limit: int = 300) -> str:
    """MCPEval-style {"tool_name", "tool_parameters"} calls, one per line."""
    if not calls:
        return "(no tool calls)"
    return "\n".join(
        f"{i}. {c['tool_name']}({_short_json(c.get('tool_parameters'), arg_limit)})" for i, c in enumerate(calls, 1)
    )


def _time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def estimate_rounds(calls: Sequence[Mapping[str, Any]]) -> int:
    """Rounds when the harness did not report them: calls that overlap in time are one round
    (an agent's parallel batch); a call starting after the batch ends opens the next."""
    rounds, batch_end = 0, None
    for call in calls:
        start, end = _time(call.get("started_at")), _time(call.get("ended_at"))
        if start is None or end is None:
            return len(calls)  # no timing: assume one call per round
        if batch_end is None or start >= batch_end:
            rounds += 1
            batch_end = end
        else:
            batch_end = max(batch_end, end)
    return rounds


def list_tools(calls: Sequence[Mapping[str, Any]], catalog: Sequence[Mapping[str, Any]] = ()) -> str:
    """Available tools: the catalog when given, else the distinct known tools seen in the run."""
    if catalog:
        return "\n".join(f"- {t['exposed_name']}: {(t.get('description') or '')[:200]}" for t in catalog)
    seen = sorted({c["exposed_name"] for c in calls if c.get("known_tool")})
    if not seen:
        return "(no tool catalog given)"
    return "\n".join(f"- {name}" for name in seen) + "\n(only the tools the agent called are listed)"
