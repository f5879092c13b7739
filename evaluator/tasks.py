"""Readers for the benchmarks' task files, agents' answers and human labels.

Shapes accepted (what the benchmarks' own loaders accept):

- MCP-Bench task JSON: {"server_tasks": [{"server_name": "A" or "A+B", "tasks": [task...]
  or "task": task}]}, {"tasks": [{"server_name", "task"}]}, {"combinations": [{"servers",
  "generated_tasks"}]} or a bare list of {"server_name", "task"}. A task has task_id,
  task_description (concrete), fuzzy_description, dependency_analysis, distraction_servers.
- MCPEval ground truth / predictions: JSON array or JSONL of {"id"|"task_id"|"name",
  "tool_calls": [{"tool_name", "tool_parameters"}], "final_response"}; predictions are
  MCPEval's evaluation results (`mcp-eval evaluate --output`), whose id is "task_id" first.
- MCP-AgentBench-style queries: {"id", "query", "reference_answer", "category"}.
- answers: JSONL {"run_id", "task_id"?, "model"?, "final_answer", "rounds"?,
  "planning_json_compliance"?} (the last two as the agent's harness reports them).
- human labels: JSONL {"id", "labels": [pass/fail per rater, null when missing]}.

Every problem is an InputError naming file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpgw.evaluator.agentbench import normalize_category
from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.jsonio import Fields, iter_jsonl, kind, line_of, load_json, load_records

RESIDENT_SERVERS = ("Time MCP",)  # MCP-Bench always connects it
# MCPEval's analyzer reads a ground-truth id as `id or task_id`, a prediction's as `task_id or id`.
TRUTH_IDS = ("id", "task_id", "name")
PREDICTION_IDS = ("task_id", "id", "name")


@dataclass
class McpBenchTask:
    task_id: str
    servers: list[str]
    fuzzy_description: str
    task_description: str
    dependency_analysis: str
    distraction_servers: list[str] = field(default_factory=list)
    source: str = ""
    line: int | None = None

    @property
    def available_servers(self) -> set[str]:
        return {*self.servers, *RESIDENT_SERVERS, *self.distraction_servers}


@dataclass
class McpEvalTask:
    task_id: str
    tool_calls: list[dict[str, Any]]
    final_response: str | None
    model: str | None = None
    description: str = ""
    source: str = ""
    line: int | None = None


@dataclass
class AgentBenchTask:
    task_id: str
    query: str
    reference_answer: str
    category: str | None
    source: str = ""
    line: int | None = None


@dataclass
class Answer:
    run_id: str
    task_id: str
    model: str | None
    final_answer: str
    rounds: int | None = None
    planning_json_compliance: float | None = None


# ---- MCP-Bench -------------------------------------------------------------------------


def _entries(data: Any, source: str) -> list[tuple[str, Any, Any, str]]:
    """Flatten every MCP-Bench layout into (server_name, task, container, path)."""
    if isinstance(data, list):
        return [
            (_server_name(e, source, f"[{i}]"), _inner_task(e, source, f"[{i}]"), e, f"[{i}]")
            for i, e in enumerate(data)
        ]
    if not isinstance(data, Mapping):
        raise InputError(source, line_of(data, 1), None, f"expected an MCP-Bench task object or list, got {kind(data)}")
    out = []
    if "server_tasks" in data:
        groups = Fields(data, source, line_of(data)).items("server_tasks")
        for i, group in enumerate(groups):
            path = f"server_tasks[{i}]"
            g = Fields(group, source, line_of(group), path)
            name = g.text("server_name")
            if "task" in group:
                out.append((name, group["task"], group, f"{path}.task"))
            else:
                out.extend((name, t, group, f"{path}.tasks[{j}]") for j, t in enumerate(g.items("tasks")))
    elif "combinations" in data:
        for i, combo in enumerate(Fields(data, source, line_of(data)).items("combinations")):
            path = f"combinations[{i}]"
            c = Fields(combo, source, line_of(combo), path)
            servers = c.items("servers", required=False)
            name = "+".join(str(s) for s in servers) or c.text("combination_name")
            generated = c.items("generated_tasks")
            out.extend((name, t, combo, f"{path}.generated_tasks[{j}]") for j, t in enumerate(generated))
    elif "tasks" in data:
        items = Fields(data, source, line_of(data)).items("tasks")
        out = [
            (_server_name(e, source, f"tasks[{i}]"), _inner_task(e, source, f"tasks[{i}]"), e, f"tasks[{i}]")
            for i, e in enumerate(items)
        ]
    else:
        raise InputError(
            source,
            line_of(data, 1),
            "server_tasks",
            "missing: an MCP-Bench task file has 'server_tasks', 'tasks' or 'combinations'",
        )
    return out


def _server_name(entry: Any, source: str, path: str) -> str:
    f = Fields(entry, source, line_of(entry), path)
    if "server_name" in entry:
        return f.text("server_name")
    inner = entry.get("task")
    if isinstance(inner, Mapping) and inner.get("server_name"):
        return Fields(inner, source, line_of(inner), f"{path}.task").text("server_name")
    servers = f.items("servers", required=False)
    if servers:
        return "+".join(str(s) for s in servers)
    raise f.fail("server_name", "missing (expected 'server_name' or 'servers')")


def _inner_task(entry: Any, source: str, path: str) -> Any:
    return entry["task"] if isinstance(entry, Mapping) and "task" in entry else entry


def read_mcpbench_tasks(path: str | Path, data: Any = None) -> list[McpBenchTask]:
    source = str(path)
    data = load_json(path) if data is None else data
    tasks, seen = [], {}
    for server_name, raw, _container, field_path in _entries(data, source):
        f = Fields(raw, source, line_of(raw), field_path)
        task_id = f.text("task_id", "id")
        if task_id in seen:
            raise f.fail("task_id", f"duplicate task id {task_id!r} (first at line {seen[task_id]})")
        seen[task_id] = f.line
        analysis = raw.get("dependency_analysis")
        if analysis is not None and not isinstance(analysis, str):
            analysis = json.dumps(analysis, indent=1, ensure_ascii=False)  # some generators emit structure
        distractors = f.items("distraction_servers", required=False)
        for i, name in enumerate(distractors):
            if not isinstance(name, str):
                raise f.fail(f"distraction_servers[{i}]", f"expected a server name, got {kind(name)}")
        concrete = f.text("task_description", required=False, default="")
        tasks.append(
            McpBenchTask(
                task_id=task_id,
                servers=[s.strip() for s in server_name.split("+") if s.strip()],
                fuzzy_description=f.text("fuzzy_description", required=False, default=concrete),
                task_description=concrete,
                dependency_analysis=analysis or "",
                distraction_servers=list(distractors),
                source=source,
                line=f.line,
            )
        )
    if not tasks:
        raise InputError(source, None, None, "no tasks found")
    return tasks


# ---- MCPEval ---------------------------------------------------------------------------


def read_mcpeval_tasks(path: str | Path, id_keys: tuple[str, ...] = TRUTH_IDS) -> dict[str, McpEvalTask]:
    """Ground-truth or prediction records, keyed by task id."""
    source = str(path)
    out: dict[str, McpEvalTask] = {}
    for line, record in load_records(path):
        f = Fields(record, source, line)
        task_id = f.text(*id_keys)
        if task_id in out:
            raise f.fail("task_id", f"duplicate task id {task_id!r} (first at line {out[task_id].line})")
        calls = []
        for i, call in enumerate(f.items("tool_calls")):
            c = Fields(call, source, line, f"tool_calls[{i}]")
            name = c.text("tool_name")
            params = call.get("tool_parameters")
            if not isinstance(params, Mapping):
                problem = "missing" if params is None else f"got {kind(params)}"
                raise c.fail("tool_parameters", f"{problem} (expected an object)")
            calls.append({"tool_name": name, "tool_parameters": dict(params)})
        final = record.get("final_response")
        if final is not None and not isinstance(final, str):
            final = json.dumps(final, ensure_ascii=False)
        description = " ".join(filter(None, (f.text(k, required=False) for k in ("description", "goal"))))
        out[task_id] = McpEvalTask(task_id, calls, final, f.text("model", required=False), description, source, line)
    return out


# ---- MCP-AgentBench --------------------------------------------------------------------


def read_agentbench_tasks(path: str | Path) -> dict[str, AgentBenchTask]:
    source = str(path)
    out: dict[str, AgentBenchTask] = {}
    for line, record in load_records(path):
        f = Fields(record, source, line)
        task_id = f.text("id", "task_id", "query_id", "qid")
        if task_id in out:
            raise f.fail("id", f"duplicate query id {task_id!r} (first at line {out[task_id].line})")
        out[task_id] = AgentBenchTask(
            task_id=task_id,
            query=f.text("query", "question", "user_query"),
            reference_answer=f.text("reference_answer", "answer", "reference", "ground_truth"),
            category=normalize_category(f.text("category", "type", required=False)),
            source=source,
            line=line,
        )
    return out


# ---- answers and labels ----------------------------------------------------------------


def read_answers(path: str | Path) -> dict[str, Answer]:
    source = str(path)
    out: dict[str, Answer] = {}
    first_line: dict[str, int] = {}
    for line, record in iter_jsonl(path):
        f = Fields(record, source, line)
        run_id = f.text("run_id", "run")
        if run_id in out:
            raise f.fail("run_id", f"duplicate run id {run_id!r} (first at line {first_line[run_id]})")
        rounds = f.number("rounds")
        planning = f.number("planning_json_compliance")
        out[run_id] = Answer(
            run_id=run_id,
            task_id=f.text("task_id", required=False, default=run_id),
            model=f.text("model", required=False),
            final_answer=f.text("final_answer", "answer", "final_response", "response"),
            rounds=int(rounds) if rounds is not None else None,
            planning_json_compliance=planning,
        )
        first_line[run_id] = line
    return out


_LABELS = {
    "pass": True,
    "passed": True,
    "true": True,
    "yes": True,
    "1": True,
    "fail": False,
    "failed": False,
    "false": False,
    "no": False,
    "0": False,
}


def parse_label(value: Any) -> bool | None | str:
    """True/False/None for a recognisable pass/fail label; the text itself when not recognisable."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    return _LABELS.get(text, str(value)) if text else None


def read_labels(path: str | Path) -> dict[str, list[bool | None]]:
    source = str(path)
    out: dict[str, list[bool | None]] = {}
    for line, record in iter_jsonl(path):
        f = Fields(record, source, line)
        item = f.text("id", "task_id", "run_id")
        labels = []
        for i, raw in enumerate(f.items("labels")):
            label = parse_label(raw)
            if isinstance(label, str):
                raise f.fail(f"labels[{i}]", f"{raw!r} is not a pass/fail label (pass, fail, true, false or null)")
            labels.append(label)
        out[item] = labels
    return out


# ---- detection -------------------------------------------------------------------------


def detect_kind(path: str | Path) -> str:
    """'mcpbench', 'mcpeval' or 'agentbench', from the file's content."""
    source = str(path)
    try:
        data = load_json(path)
    except InputError:
        data = None  # JSONL: look at the first record
    if isinstance(data, Mapping) and any(k in data for k in ("server_tasks", "combinations", "tasks")):
        return "mcpbench"
    records = data if isinstance(data, list) else [r for _, r in load_records(path)[:1]]
    if not records:
        raise InputError(source, None, None, "no records found")
    first = records[0] if isinstance(records[0], Mapping) else {}
    if "tool_calls" in first:
        return "mcpeval"
    if any(k in first for k in ("query", "question", "user_query")):
        return "agentbench"
    if "task" in first and ("server_name" in first or "servers" in first):
        return "mcpbench"
    raise InputError(
        source,
        line_of(records[0], 1),
        None,
        "cannot tell the task format: expected MCP-Bench tasks (server_tasks), MCPEval "
        "records (tool_calls) or MCP-AgentBench queries (query, reference_answer)",
    )
