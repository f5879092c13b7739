"""Which servers an MCP-Bench task's agent is offered, as MCP-Bench's runner decides it: the
task's own servers, the resident servers it always adds, and distraction servers: the task
file's list when it names one, else `count` others drawn from what the gateway serves.

MCP-Bench draws with the unseeded global `random`; here the draw is seeded by (seed, task id),
so one seed offers the same tools in every run, record and replay alike, whatever other tasks
run, in whatever order."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpgw.runs.tasks import RunTask
    from mcpgw.runs.tools import ServerNames

DEFAULT_COUNT = 10  # MCP-Bench's --distraction-count default
DEFAULT_SEED = 0


def offered_servers(
    task: RunTask, names: ServerNames, count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED
) -> set[str] | None:
    """Benchmark names or gateway ids of the servers to offer; None: every served server."""
    if task.servers is None:
        return None
    offered = {*task.servers, *task.resident}
    if count <= 0:  # distraction off, as MCP-Bench's --distraction-count 0
        return offered
    if task.distraction:  # the task file's own list is used whole, whatever the count
        return offered | set(task.distraction)
    return offered | set(draw(task.task_id, names, offered, count, seed))


def draw(task_id: str, names: ServerNames, taken: set[str], count: int, seed: int) -> list[str]:
    """`count` served server ids (all of them if fewer), none of `taken`, the same for one seed and task."""
    pool = sorted(set(names.titles) - names.matching(taken))  # sorted: independent of the gateway's order
    # A str seed is hashed with SHA-512 by `random`, the same in every process (PYTHONHASHSEED aside).
    return random.Random(f"{seed}:{task_id}").sample(pool, min(count, len(pool)))
