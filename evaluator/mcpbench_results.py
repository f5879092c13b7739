"""MCP-Bench's own per-task results, re-scored with MCP-Bench's rules.

A user who ran MCP-Bench's harness has, per task, what its executor returned
(`execution_results`, `available_tools`, `planning_json_compliance`,
`total_rounds`) and usually the runner's wrapper around it (`task_id`,
`model_name`, `status`, `evaluation`). Shapes read:

- one task object, a JSON array of them, or JSONL (one per line);
- {"model": [task, ...], ...}, also under "task_run_results", or {"results": [task, ...]}.

Each execution result is read exactly as MCP-Bench's evaluator reads it
(`tool`, `parameters`, `success`, `server`; a record that is not an object is
a call to the tool "" that failed). A task's `evaluation`, when present, is
what MCP-Bench reported: the re-score is compared with it field by field.
MCP-Bench's saved aggregate file (metrics only, no tasks) cannot be re-scored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.jsonio import Fields, LineDict, iter_jsonl, kind, line_of, load_json
from mcpgw.evaluator.mcpbench_rules import RATES, Call, aggregate_files, aggregate_tasks, score_calls
from mcpgw.evaluator.schemas import SchemaChecks

UNKNOWN_MODEL = "unknown"
TOLERANCE = 1e-9


@dataclass
class ResultTask:
    task_id: str
    model: str
    status: str
    execution_results: list[Any]
    available_tools: Mapping[str, Any] | None
    planning_json_compliance: float
    total_rounds: float | None
    evaluation: Mapping[str, Any] | None  # what MCP-Bench reported; None when absent
    evaluation_null: bool = False  # "evaluation": null -> MCP-Bench left the task out of its averages
    server_name: str = ""
    source: str = ""
    line: int | None = None


# ---- reading ------------------------------------------------------------------------------

SUMMARY_KEYS = ("input_schema_compliance", "tool_call_success_rate", "final_metrics", "task_completion_score")


def results_kind(data: Any, source: str) -> str:
    """'mcpbench' (per-task results with execution_results) or 'mcpeval' (evaluation results with
    tool_calls); anything else is an InputError saying what was expected."""
    if isinstance(data, Mapping) and "tool_calls" in data:  # one MCPEval record
        return "mcpeval"
    first = _first_record(data)
    if isinstance(first, Mapping):
        if "execution_results" in first or (first.get("status") == "failed" and "server_name" in first):
            return "mcpbench"
        if "tool_calls" in first:
            return "mcpeval"
    if isinstance(data, Mapping) and any(key in data for key in SUMMARY_KEYS):
        raise InputError(
            source,
            line_of(data, 1),
            None,
            "this is an MCP-Bench metrics summary (no per-task execution_results); re-scoring "
            "needs the per-task results (each with execution_results and available_tools)",
        )
    raise InputError(
        source,
        line_of(first if isinstance(first, Mapping) else data, 1),
        None,
        "cannot tell the result format: expected MCP-Bench task results (execution_results, "
        "available_tools) or MCPEval evaluation results (task_id, tool_calls)",
    )


def _first_record(data: Any) -> Any:
    if isinstance(data, list):
        return data[0] if data else None
    if not isinstance(data, Mapping):
        return None
    if "execution_results" in data:
        return data
    for key in ("task_run_results", "results"):
        if key in data:
            return _first_record(data[key])
    for value in data.values():
        if isinstance(value, list) and value:
            return value[0]
    return None


LINES_UP_TO = 4_000_000  # bytes; bigger files are parsed by the C parser, without line numbers


def load_document(path: str) -> Any:
    """One JSON document, or the records of a JSONL file as a list (with their line numbers)."""
    try:
        small = os.path.getsize(path) <= LINES_UP_TO
    except OSError:
        small = True  # load_json reports the problem
    try:
        return load_json(path, with_lines=small)
    except InputError as exc:
        if "Extra data" not in exc.problem:
            raise
    return [_stamped(record, line) for line, record in iter_jsonl(path)]


def _stamped(record: Any, line: int) -> Any:
    if not isinstance(record, dict):
        return record
    stamped = LineDict(record)
    stamped.line = line
    return stamped


def read_results(path: str, data: Any = None) -> list[ResultTask]:
    source = str(path)
    data = load_document(source) if data is None else data
    grouped = _grouped(data, source)
    tasks = [_task(raw, source, where, model) for model, where, raw in grouped]
    if not tasks:
        raise InputError(source, None, None, "no task results found")
    return tasks


def _grouped(data: Any, source: str) -> list[tuple[str | None, str, Any]]:
    """(model from the layout or None, field path, raw task) for every task."""
    if isinstance(data, list):
        return [(None, f"[{i}]", raw) for i, raw in enumerate(data)]
    if not isinstance(data, Mapping):
        raise InputError(source, line_of(data, 1), None, f"expected MCP-Bench task results, got {kind(data)}")
    if "execution_results" in data or data.get("status") == "failed":
        return [(None, "", data)]
    if isinstance(data.get("results"), list):
        return [(None, f"results[{i}]", raw) for i, raw in enumerate(data["results"])]
    by_model = data.get("task_run_results", data)
    prefix = "task_run_results." if "task_run_results" in data else ""
    out = []
    for model, items in by_model.items():
        if not isinstance(items, list):
            if any(key in data for key in ("input_schema_compliance", "tool_call_success_rate", "final_metrics")):
                raise InputError(
                    source,
                    line_of(data, 1),
                    None,
                    "this is an MCP-Bench metrics summary (no per-task execution_results); re-scoring "
                    "needs the per-task results (each with execution_results and available_tools)",
                )
            raise InputError(
                source, line_of(by_model, 1), f"{prefix}{model}", f"expected a list of task results, got {kind(items)}"
            )
        out += [(str(model), f"{prefix}{model}[{i}]", raw) for i, raw in enumerate(items)]
    return out


def _task(raw: Any, source: str, where: str, model: str | None) -> ResultTask:
    f = Fields(raw, source, line_of(raw), where)
    status = f.text("status", required=False, default="completed")
    executions = raw.get("execution_results")
    if executions is None and status == "completed":
        raise f.fail("execution_results", "missing (a completed task needs its execution_results, [] when none)")
    if executions is not None and not isinstance(executions, list):
        raise f.fail("execution_results", f"expected a list, got {kind(executions)}")
    tools = raw.get("available_tools")
    if tools is not None and not isinstance(tools, Mapping):
        raise f.fail("available_tools", f"expected an object (tool name -> tool), got {kind(tools)}")
    evaluation = raw.get("evaluation")
    if evaluation is not None and not isinstance(evaluation, Mapping):
        raise f.fail("evaluation", f"expected an object, got {kind(evaluation)}")
    planning = f.number("planning_json_compliance")
    if (
        planning is None
        and evaluation is not None
        and isinstance(evaluation.get("planning_json_compliance"), (int, float))
    ):
        planning = float(evaluation["planning_json_compliance"])
    return ResultTask(
        task_id=f.text("task_id", "id", required=False, default="unknown"),  # MCP-Bench's own default id
        model=f.text("model_name", "model", required=False) or model or UNKNOWN_MODEL,
        status=status,
        execution_results=list(executions or []),
        available_tools=tools,
        planning_json_compliance=1.0 if planning is None else planning,  # the runner's default when not reported
        total_rounds=f.number("total_rounds"),
        evaluation=evaluation,
        evaluation_null="evaluation" in raw and evaluation is None,
        server_name=f.text("server_name", required=False, default=""),
        source=source,
        line=f.line,
    )


def tools_from_catalog(catalog: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A --tools catalog in MCP-Bench's available_tools shape (for results that lack their own)."""
    out: dict[str, Any] = {}
    for tool in catalog:
        if tool.get("unusable"):
            out[tool["exposed_name"]] = None
        else:
            out[tool["exposed_name"]] = {
                "server": tool["server"],
                "name": tool["tool"],
                "input_schema": tool["inputSchema"] or {},
            }
    return out


# ---- scoring exactly as MCP-Bench -----------------------------------------------------------


class Scorer:
    """MCP-Bench's per-call rules on raw execution results; schemas compiled once per digest."""

    def __init__(self, checks: SchemaChecks | None = None) -> None:
        self.checks = checks or SchemaChecks()
        self._digests: dict[int, tuple[Any, str]] = {}

    def _complies(self, tool: Any, parameters: Any, available_tools: Mapping[str, Any]) -> bool:
        # MCP-Bench: info = available_tools.get(tool, {}); schema = info.get("input_schema", {});
        # a falsy schema passes; anything raised (a null entry has no .get) means non-compliant.
        info = available_tools.get(tool, {})
        if not isinstance(info, Mapping):
            return False
        schema = info.get("input_schema", {})
        if not schema:
            return True
        known = self._digests.get(id(schema))
        if known is None or known[0] is not schema:
            known = (schema, self.checks.add(schema))
            self._digests[id(schema)] = known
        return bool(self.checks.verdict(known[1], parameters))

    def calls(self, execution_results: Sequence[Any], available_tools: Mapping[str, Any]) -> tuple[list[Call], bool]:
        """The calls, and whether MCP-Bench's evaluator would have crashed on them (an unhashable tool
        name or server raises TypeError there, its evaluate() returns None and the task is left out)."""
        out, crashes = [], False
        for result in execution_results:
            record = result if isinstance(result, Mapping) else {}  # safe_get on a non-dict gives the defaults
            tool = record.get("tool", "")
            if not isinstance(tool, Hashable):
                tool, crashes = json.dumps(tool, sort_keys=True), True
            valid = tool in available_tools
            compliant = valid and self._complies(tool, record.get("parameters", {}), available_tools)
            server = record.get("server", "")
            if server and not isinstance(server, Hashable):
                server, crashes = json.dumps(server, sort_keys=True), True
            out.append(Call(valid, compliant, bool(record.get("success", False)), server or None))
        return out, crashes

    def task(self, task: ResultTask, fallback_tools: Mapping[str, Any] | None) -> dict[str, Any]:
        tools = task.available_tools if task.available_tools is not None else fallback_tools
        if tools is None and task.execution_results:
            raise InputError(
                task.source,
                task.line,
                "available_tools",
                "missing: MCP-Bench needs the task's available tools to tell valid names and schemas "
                "(save them with the results, or pass the catalog with --tools)",
            )
        calls, crashes = self.calls(task.execution_results, tools or {})
        row = score_calls(calls, planning_json_compliance=task.planning_json_compliance, total_rounds=task.total_rounds)
        row["status"] = task.status
        row["task_id"] = task.task_id
        if task.evaluation_null:
            row["excluded"] = "MCP-Bench's evaluation of this task failed (evaluation: null); left out of averages"
        elif crashes:
            row["excluded"] = (
                "a tool name or server is not a string: MCP-Bench's evaluation would fail on it "
                "and leave the task out of averages"
            )
        if task.evaluation is not None:
            row["reported"] = reported_fields(task.evaluation)
        return row


def reported_fields(evaluation: Mapping[str, Any]) -> dict[str, Any]:
    keys = (*RATES, "planning_json_compliance", "server_utilization_metrics")
    return {k: evaluation[k] for k in keys if k in evaluation}


def differences(task_id: str, row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Where the re-score and MCP-Bench's reported evaluation disagree."""
    out = []
    for key, theirs in row.get("reported", {}).items():
        ours = row[key]
        if key == "server_utilization_metrics" and isinstance(theirs, Mapping):
            for sub, value in theirs.items():
                mine = ours.get(sub)
                if not _same(mine, value):
                    out.append({"task": task_id, "metric": f"{key}.{sub}", "ours": mine, "reported": value})
        elif not _same(ours, theirs):
            out.append({"task": task_id, "metric": key, "ours": ours, "reported": theirs})
    return out


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return ours == theirs
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        return abs(ours - theirs) <= TOLERANCE
    return ours == theirs


def score_results(
    files: Mapping[str, list[ResultTask]],
    *,
    checks: SchemaChecks | None = None,
    fallback_tools: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """model -> {tasks, files, overall, disagreements}; each results file is one task file."""
    scorer = Scorer(checks)
    out: dict[str, dict[str, Any]] = {}
    for path, tasks in files.items():
        per_model: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for task in tasks:
            per_model.setdefault(task.model, []).append((task.task_id, scorer.task(task, fallback_tools)))
        for model, rows in per_model.items():
            entry = out.setdefault(model, {"tasks": {}, "files": {}, "disagreements": []})
            for task_id, row in rows:
                key = task_id if task_id not in entry["tasks"] else f"{path}#{task_id}"
                n = 2
                while key in entry["tasks"]:
                    key, n = f"{path}#{task_id}#{n}", n + 1
                entry["tasks"][key] = row
                entry["disagreements"] += differences(key, row)
            entry["files"][path] = aggregate_tasks(row for _, row in rows)
    for entry in out.values():
        entry["overall"] = aggregate_files(entry["files"])
    return out
