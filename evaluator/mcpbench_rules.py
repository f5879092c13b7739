"""MCP-Bench's rule-based metrics, from call-log records.

Per task (one run = one task), over its tool calls E:

- valid tool name rate      = valid-name calls / |E|
- schema compliance rate    = compliant valid-name calls / valid-name calls (0.0 when none)
- execution success rate    = calls that returned without exception and without isError / |E|
- valid call failure rate   = valid-name calls that failed / valid-name calls (0.0 when none,
                              as MCP-Bench's code does)

A task with no calls gets None for all four. Averages over tasks skip None,
and an average over nothing is 0.0 (MCP-Bench's `safe_avg`). Over several
task files: average per file, then the plain mean of the file averages.

Mapping the call log onto MCP-Bench's terms:
- valid name: the gateway resolved the name (`known_tool`); optionally the
  call must also target one of the task's servers (required + Time MCP +
  distractors) when `servers` is given.
- compliant: the gateway's recorded verdict `validation.valid` (it validates
  with the same semantics: the schema's draft, no formats, an invalid schema
  fails). When there is no verdict (validation off) and the schema is known
  (digest -> schema), it is checked here with MCP-Bench's semantics (see
  `schemas`); `recheck=True` checks every call that way, ignoring verdicts.
  A call with neither verdict nor schema counts as compliant (nothing to check
  against, like an empty schema) and is counted in `unchecked`.
- success: outcome "ok" and not isError; rejections, upstream errors,
  timeouts and replay misses are exceptions from the agent's point of view.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from evaluator.schemas import SchemaChecks

METRICS = ("valid_tool_name_rate", "schema_compliance_rate", "execution_success_rate", "valid_call_failure_rate")


def call_succeeded(record: Mapping[str, Any]) -> bool:
    return record["outcome"] == "ok" and not record.get("is_error")


def _server_of(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
    # Benchmark naming exposes "Server Name:tool"; the part before ":" is the display name.
    name = record.get("exposed_name") or ""
    display = name.split(":", 1)[0] if ":" in name else None
    return record.get("server"), display


def task_metrics(
    calls: Sequence[Mapping[str, Any]],
    *,
    checks: SchemaChecks | None = None,
    servers: Container[str] | None = None,
    recheck: bool = False,
) -> dict[str, Any]:
    """The four rates for one task, plus the counts they come from."""
    total = len(calls)
    valid = compliant = succeeded = valid_failed = unchecked = 0
    use_schemas = bool(checks)
    for record in calls:
        ok = record["outcome"] == "ok" and not record.get("is_error")
        if ok:
            succeeded += 1
        if not record.get("known_tool"):
            continue
        if servers is not None:
            server, display = _server_of(record)
            if server not in servers and display not in servers:
                continue
        valid += 1
        if not ok:
            valid_failed += 1
        validation = record.get("validation")
        verdict = validation.get("valid") if validation else None
        if use_schemas and (recheck or verdict is None):
            digest = record.get("input_schema_digest")
            rechecked = None if digest is None else checks.verdict(digest, record.get("arguments"))  # type: ignore
            if rechecked is not None:
                compliant += rechecked
                continue
        if verdict is None:
            unchecked += 1
            compliant += 1
        elif verdict:
            compliant += 1
    counts = {"calls": total, "valid_name_calls": valid, "compliant_calls": compliant,
              "successful_calls": succeeded, "valid_failed_calls": valid_failed, "unchecked_calls": unchecked}
    if total == 0:
        return {**dict.fromkeys(METRICS), **counts}
    return {
        "valid_tool_name_rate": valid / total,
        "schema_compliance_rate": compliant / valid if valid else 0.0,
        "execution_success_rate": succeeded / total,
        "valid_call_failure_rate": valid_failed / valid if valid else 0.0,
        **counts,
    }


def mean_skipping_none(values: Iterable[float | None]) -> float:
    """MCP-Bench's safe_avg: None is skipped; nothing left -> 0.0."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def aggregate_tasks(per_task: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One task file's averages; `tasks_with_calls` says how many tasks each average is over."""
    rows = list(per_task)
    result: dict[str, Any] = {name: mean_skipping_none(row[name] for row in rows) for name in METRICS}
    result["tasks"] = len(rows)
    result["tasks_with_calls"] = sum(1 for row in rows if row["calls"])
    result["calls"] = sum(row["calls"] for row in rows)
    result["unchecked_calls"] = sum(row["unchecked_calls"] for row in rows)
    return result


def aggregate_files(per_file: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Across task files: the mean of the per-file averages (each file weighs the same)."""
    files = list(per_file.values())
    result: dict[str, Any] = {
        name: (sum(f[name] for f in files) / len(files) if files else 0.0) for name in METRICS
    }
    result["files"] = len(files)
    result["tasks"] = sum(f["tasks"] for f in files)
    result["calls"] = sum(f["calls"] for f in files)
    result["unchecked_calls"] = sum(f["unchecked_calls"] for f in files)
    return result


def score_runs(
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    files: Mapping[str, Sequence[str]] | None = None,
    *,
    checks: SchemaChecks | None = None,
    servers_by_run: Mapping[str, Container[str]] | None = None,
    recheck: bool = False,
) -> dict[str, Any]:
    """Per task, per file and overall. `files` maps a task file to its run ids; a run id
    listed there but absent from the log is a task with no calls (None, skipped)."""
    servers_by_run = servers_by_run or {}
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
                row = task_metrics(runs.get(run_id, empty), checks=checks, servers=servers_by_run.get(run_id),
                                   recheck=recheck)
                per_task[run_id] = row
            rows.append(row)
        per_file[name] = aggregate_tasks(rows)
    return {"tasks": per_task, "files": per_file, "overall": aggregate_files(per_file)}
