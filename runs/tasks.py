"""Tasks to run, from the evaluator's readers: what the agent is asked, and which
benchmark servers it may use (None: every server the gateway serves)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluator.errors import InputError
from evaluator.tasks import detect_kind, read_agentbench_tasks, read_mcpbench_tasks, read_mcpeval_tasks


@dataclass
class RunTask:
    task_id: str
    prompt: str
    servers: set[str] | None  # benchmark server names (display titles) the task may use
    kind: str
    source: str


def load_tasks(paths: list[str], *, use_fuzzy: bool = True) -> list[RunTask]:
    """Every task of every file, in file order. MCP-Bench agents are given the fuzzy
    description (the concrete one is what the judge checks against), as MCP-Bench does."""
    out: list[RunTask] = []
    for path in paths:
        source = str(Path(path).resolve())
        kind = detect_kind(path)
        if kind == "mcpbench":
            for t in read_mcpbench_tasks(path):
                prompt = (t.fuzzy_description if use_fuzzy else "") or t.task_description
                out.append(RunTask(t.task_id, prompt, set(t.available_servers), kind, source))
        elif kind == "mcpeval":
            for t in read_mcpeval_tasks(path).values():
                if not t.description:  # the reference answer is not something to hand the agent
                    raise InputError(source, t.line, "description", "missing: the agent needs the task's description or goal")
                out.append(RunTask(t.task_id, t.description, None, kind, source))
        else:
            for t in read_agentbench_tasks(path).values():
                out.append(RunTask(t.task_id, t.query, None, kind, source))
    return out
