"""MCP-Bench's rule-based metrics, under MCP-Bench's own names (evaluator/METRICS.md).

Per task, over its tool calls E (MCP-Bench's per-task `evaluation` fields):

- valid_tool_name_rate      = valid-name calls / |E|
- input_schema_compliance   = compliant valid-name calls / valid-name calls (0.0 when none)
- execution_success_rate    = successful calls / |E|
- valid_call_failure_rate   = failed valid-name calls / valid-name calls (0.0 when none)
- planning_json_compliance  = what the agent's harness reported (MCP-Bench: well-formed planned
                              tool entries / planned entries); None when nothing reported it
- server_utilization_metrics = server_count (distinct servers the calls went to),
                              cross_server_coordination (more than one), server_distribution

A task with no calls gets None for the four rates and 0 servers. Per task file
(MCP-Bench's saved metrics): the rates averaged over completed tasks, skipping
None, 0.0 over nothing (`safe_avg`); `tool_call_success_rate` is the mean of
execution_success_rate; avg_tool_calls_per_task and avg_servers_used count
zero-call tasks as 0; cross_server_coordination_rate is over completed tasks.
Over several task files: the plain mean of the file values.

Two sources feed the same scoring (`Call` lists): the gateway's call log
(`calls_from_log`, here) and MCP-Bench's own result files (`mcpbench_results`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpgw.evaluator.schemas import SchemaChecks

RATES = ("input_schema_compliance", "valid_tool_name_rate", "execution_success_rate", "valid_call_failure_rate")
# Per task file, MCP-Bench's saved names -> the per-task field averaged.
FILE_RATES = {
    "input_schema_compliance": "input_schema_compliance",
    "valid_tool_name_rate": "valid_tool_name_rate",
    "tool_call_success_rate": "execution_success_rate",
    "valid_call_failure_rate": "valid_call_failure_rate",
}
# Averages that exist only when some task reports the underlying value.
OPTIONAL = ("planning_json_compliance", "avg_total_rounds", "task_success_rate")
FILE_METRICS = (*FILE_RATES, "avg_tool_calls_per_task", "avg_servers_used", "cross_server_coordination_rate")


@dataclass(slots=True)
class Call:
    """One tool call as MCP-Bench's rules see it."""

    valid_name: bool
    compliant: bool  # read only for valid-name calls
    succeeded: bool
    server: Hashable | None  # counted in server utilization when truthy
    unchecked: bool = False  # compliant only because there was nothing to check against
    tool_error: bool = False  # answered with isError (MCP-Bench's HTTP transport counts it a success)


def score_calls(
    calls: Sequence[Call], *, planning_json_compliance: float | None = None, total_rounds: float | None = None
) -> dict[str, Any]:
    """One task's evaluation fields, plus the counts they come from."""
    total = len(calls)
    valid = compliant = succeeded = valid_failed = unchecked = tool_errors = 0
    servers: Counter[Hashable] = Counter()
    for c in calls:
        succeeded += c.succeeded
        tool_errors += c.tool_error
        if c.server:
            servers[c.server] += 1
        if not c.valid_name:
            continue
        valid += 1
        compliant += c.compliant
        unchecked += c.unchecked
        valid_failed += not c.succeeded
    row: dict[str, Any] = dict.fromkeys(RATES)  # no calls: nothing to rate (None, skipped when averaging)
    if total:
        row.update(
            input_schema_compliance=compliant / valid if valid else 0.0,
            valid_tool_name_rate=valid / total,
            execution_success_rate=succeeded / total,
            valid_call_failure_rate=valid_failed / valid if valid else 0.0,
        )
    row["planning_json_compliance"] = planning_json_compliance
    row["server_utilization_metrics"] = {
        "server_count": len(servers),
        "cross_server_coordination": len(servers) > 1,
        "server_distribution": {str(name): count for name, count in servers.items()},
    }
    row["total_rounds"] = total_rounds
    row.update(
        calls=total,
        valid_name_calls=valid,
        compliant_calls=compliant,
        successful_calls=succeeded,
        valid_failed_calls=valid_failed,
        unchecked_calls=unchecked,
        tool_error_calls=tool_errors,
    )
    return row


# ---- the gateway's call log -------------------------------------------------------------


def call_succeeded(record: Mapping[str, Any]) -> bool:
    return record["outcome"] == "ok" and not record.get("is_error")


def _server_of(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
    # Benchmark naming exposes "Server Name:tool"; the part before ":" is the display name.
    name = record.get("exposed_name") or ""
    display = name.split(":", 1)[0] if ":" in name else record.get("server_title")  # title from the lock (names.py)
    return record.get("server"), display


def calls_from_log(
    records: Sequence[Mapping[str, Any]],
    *,
    checks: SchemaChecks | None = None,
    servers: Container[str] | None = None,
    recheck: bool = False,
) -> list[Call]:
    """Call-log records as MCP-Bench calls.

    - valid name: the gateway resolved the name (`known_tool`), and, when `servers` is given, the
      tool is on one of the task's servers (required + Time MCP + distractors);
    - compliant: the gateway's verdict `validation.valid`, except where MCP-Bench's semantics can
      differ and the schema is known (digest -> schema): no verdict, `recheck`, null arguments, or a
      schema the gateway found unusable are checked here as MCP-Bench checks them (`schemas`).
      Neither verdict nor schema: compliant, and counted in `unchecked`;
    - success: outcome "ok" and not isError; rejections, upstream errors, timeouts, replay
      misses and divergences are exceptions from the agent's point of view;
    - server: the benchmark display name ("Server Name:tool") or the gateway's server id.
    """
    out = []
    for record in records:
        ok = call_succeeded(record)
        if not record.get("known_tool"):
            out.append(Call(False, False, ok, None))
            continue
        server, display = _server_of(record)
        if servers is not None and server not in servers and display not in servers:
            out.append(Call(False, False, ok, None))
            continue
        out.append(_known_call(record, checks, recheck, ok, display or server))
    return out


def _known_call(
    record: Mapping[str, Any], checks: SchemaChecks | None, recheck: bool, ok: bool, server: Hashable | None
) -> Call:
    validation = record.get("validation") or {}
    verdict = validation.get("valid")
    arguments = record.get("arguments")
    digest = record.get("input_schema_digest")
    tool_error = record.get("outcome") == "tool_error"
    if checks and digest and (recheck or verdict is None or arguments is None or validation.get("schema_invalid")):
        rechecked = checks.verdict(digest, arguments)
        if rechecked is not None:
            return Call(True, rechecked, ok, server, tool_error=tool_error)
    return Call(True, verdict is not False, ok, server, unchecked=verdict is None, tool_error=tool_error)


def task_metrics(
    records: Sequence[Mapping[str, Any]],
    *,
    checks: SchemaChecks | None = None,
    servers: Container[str] | None = None,
    recheck: bool = False,
    planning_json_compliance: float | None = None,
    total_rounds: float | None = None,
) -> dict[str, Any]:
    """One task's metrics from its call-log records."""
    calls = calls_from_log(records, checks=checks, servers=servers, recheck=recheck)
    return score_calls(calls, planning_json_compliance=planning_json_compliance, total_rounds=total_rounds)


# ---- aggregation ---------------------------------------------------------------------------


def mean_skipping_none(values: Iterable[float | None]) -> float:
    """MCP-Bench's safe_avg: None is skipped; nothing left -> 0.0."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def _mean_or_none(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def counted(row: Mapping[str, Any]) -> bool:
    """MCP-Bench averages only tasks that completed and were evaluated."""
    return row.get("status", "completed") == "completed" and not row.get("excluded")


def aggregate_tasks(per_task: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One task file's metrics, as MCP-Bench saves them, plus how many tasks they are over."""
    rows = list(per_task)
    scored = [r for r in rows if counted(r)]
    result: dict[str, Any] = {name: mean_skipping_none(r[field] for r in scored) for name, field in FILE_RATES.items()}
    result["planning_json_compliance"] = _mean_or_none(r.get("planning_json_compliance") for r in scored)
    result["avg_tool_calls_per_task"] = mean_skipping_none(r["calls"] for r in scored)
    result["avg_servers_used"] = mean_skipping_none(r["server_utilization_metrics"]["server_count"] for r in scored)
    cross = sum(1 for r in scored if r["server_utilization_metrics"]["cross_server_coordination"])
    result["cross_server_coordination_rate"] = cross / len(scored) if scored else 0.0
    result["avg_total_rounds"] = _mean_or_none(r.get("total_rounds") for r in scored)
    statuses = any("status" in r for r in rows)
    result["task_success_rate"] = (
        sum(1 for r in rows if r.get("status") == "completed") / len(rows) if statuses and rows else None
    )
    result["tasks"] = len(rows)
    result["tasks_scored"] = len(scored)
    result["tasks_with_calls"] = sum(1 for r in scored if r["calls"])
    result["calls"] = sum(r["calls"] for r in rows)
    result["unchecked_calls"] = sum(r["unchecked_calls"] for r in rows)
    return result


def aggregate_files(per_file: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Across task files: the mean of the per-file values (each file weighs the same)."""
    files = list(per_file.values())
    result: dict[str, Any] = {name: mean_skipping_none(f[name] for f in files) for name in FILE_METRICS}
    result.update({name: _mean_or_none(f.get(name) for f in files) for name in OPTIONAL})
    result["files"] = len(files)
    for key in ("tasks", "tasks_scored", "calls", "unchecked_calls"):
        result[key] = sum(f[key] for f in files)
    return result


def score_runs(
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    files: Mapping[str, Sequence[str]] | None = None,
    *,
    checks: SchemaChecks | None = None,
    servers_by_run: Mapping[str, Container[str]] | None = None,
    recheck: bool = False,
    reported_by_run: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Per task, per file and overall. `files` maps a task file to its run ids; a run id
    listed there but absent from the log is a task with no calls (None rates, 0 calls).
    `reported_by_run` carries what the agent's harness reported per run (planning_json_compliance,
    total_rounds)."""
    servers_by_run = servers_by_run or {}
    reported_by_run = reported_by_run or {}
    empty: Sequence[Mapping[str, Any]] = ()
    if files is None:
        files = {"calls": list(runs)}
    per_task: dict[str, dict[str, Any]] = {}
    per_file: dict[str, dict[str, Any]] = {}
    for name, run_ids in files.items():
        rows = []
        for run_id in run_ids:
            row = per_task.get(run_id)
            if row is None:
                extra = reported_by_run.get(run_id, {})
                row = task_metrics(
                    runs.get(run_id, empty),
                    checks=checks,
                    servers=servers_by_run.get(run_id),
                    recheck=recheck,
                    planning_json_compliance=extra.get("planning_json_compliance"),
                    total_rounds=extra.get("total_rounds"),
                )
                per_task[run_id] = row
            rows.append(row)
        per_file[name] = aggregate_tasks(rows)
    return {"tasks": per_task, "files": per_file, "overall": aggregate_files(per_file)}
