"""Tasks to run, from the evaluator's readers: what the agent is asked, and which
benchmark servers it may use (None: every server the gateway serves). Which servers an
MCP-Bench task is offered besides its own is runs.distraction's business."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.tasks import (
    RESIDENT_SERVERS,
    detect_kind,
    read_agentbench_tasks,
    read_mcpbench_tasks,
    read_mcpeval_tasks,
)


@dataclass
class RunTask:
    task_id: str
    prompt: str
    servers: set[str] | None  # benchmark server names (display titles) the task is about
    kind: str
    source: str
    resident: tuple[str, ...] = ()  # servers MCP-Bench always adds
    distraction: list[str] = field(default_factory=list)  # named by the task file; empty: drawn
    repeat: int | None = None  # `mcpgw run --repeat K`: which of the K repeats (1..K); None: not repeated


REPEAT_MARK = "#"  # a repeat's run id is `<prefix><task id>#<i>`: the evaluator groups them (evaluator.repeats)


def run_base(prefix: str, task: RunTask) -> str:
    """The task's run id before any attempt suffix: `<prefix><task id>`, plus `#<i>` for repeat i."""
    suffix = f"{REPEAT_MARK}{task.repeat}" if task.repeat is not None else ""
    return f"{prefix}{task.task_id}{suffix}"


def repeated(tasks: list[RunTask], times: int) -> list[RunTask]:
    """Every task `times` times, each repeat a run of its own (task by task: a task's repeats run side by
    side). Once: the tasks as they are, so the run ids of a run without --repeat do not change."""
    if times == 1:
        return tasks
    return [replace(task, repeat=i) for task in tasks for i in range(1, times + 1)]


def load_tasks(paths: list[str], *, use_fuzzy: bool = True) -> list[RunTask]:
    """Every task of every file, in file order. MCP-Bench agents are given the fuzzy
    description (the concrete one is what the judge checks against), as MCP-Bench does;
    `use_fuzzy=False` gives them the concrete one, as its --disable-fuzzy."""
    out: list[RunTask] = []
    for path in paths:
        source = str(Path(path).resolve())
        kind = detect_kind(path)
        if kind == "mcpbench":
            for bench in read_mcpbench_tasks(path):
                prompt = (bench.fuzzy_description if use_fuzzy else "") or bench.task_description
                out.append(
                    RunTask(
                        bench.task_id,
                        prompt,
                        set(bench.servers),
                        kind,
                        source,
                        RESIDENT_SERVERS,
                        list(bench.distraction_servers),
                    )
                )
        elif kind == "mcpeval":
            for t in read_mcpeval_tasks(path).values():
                if not t.description:  # the reference answer is not something to hand the agent
                    raise InputError(
                        source, t.line, "description", "missing: the agent needs the task's description or goal"
                    )
                out.append(RunTask(t.task_id, t.description, None, kind, source))
        else:
            for agent in read_agentbench_tasks(path).values():
                out.append(RunTask(agent.task_id, agent.query, None, kind, source))
    return out
