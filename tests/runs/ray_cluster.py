"""A Ray cluster of several nodes on this host, for the --ray tests and bench: a head that runs
nothing (no CPU) and worker nodes of one CPU each, every raylet on 127.0.0.1, Ray's object
store kept small. Also the run helpers those tests share."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.llm.scripted_model import ScriptedModel, strategy_of
from tests.runs.scripts import PLANS, tc_steps

LOOPBACK = "127.0.0.1"
STORE = 80 * 1024 * 1024  # bytes of object store per node: answers are small
SERVERS = ["unit_converter", "medical_calculator", "time_mcp"]
BASE_TASKS = [task_id for task_id, _ in PLANS.values() if task_id.split("_0")[0] in SERVERS]
# Ray rewrites a loopback address to the machine's outward one unless told the cluster is local.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


@contextlib.contextmanager
def local_cluster(nodes: int, env: dict[str, str] | None = None) -> Iterator[Any]:
    os.environ.update(RAY_ENV)
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": STORE,
            "node_ip_address": LOOPBACK,
            "include_dashboard": False,
        },
    )
    try:
        for i in range(nodes):
            cluster.add_node(
                num_cpus=1,
                object_store_memory=STORE,
                node_ip_address=LOOPBACK,
                resources={f"mcpgw_test_node{i}": 1},
                env_vars=env,
            )
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()


class ConversationModel(ScriptedModel):
    """The scripted model, its turn read from the conversation (assistant messages so far) rather
    than counted: a task rerun after its node died gets the same replies from the start."""

    def step_for(self, body: dict[str, Any]) -> tuple[tuple[str, str] | None, dict[str, Any] | None]:
        text = json.dumps(body.get("messages"), ensure_ascii=False)
        for (kind, marker), steps in self.script.items():
            if kind == strategy_of(body) and marker in text:
                index = sum(1 for m in body.get("messages") or () if m.get("role") == "assistant")
                self.turns[(kind, marker)] = index + 1  # the reply's ids follow the turn, not the arrival order
                return (kind, marker), steps[index] if index < len(steps) else {"text": "(script exhausted)"}
        return None, None


def script() -> dict[tuple[str, str], list[dict[str, Any]]]:
    """tc conversations of the base tasks, without the scripted 500 (a retry would get it again)."""
    return {
        ("tc", marker): [s for s in tc_steps(marker, rounds) if "status" not in s]
        for marker, (task_id, rounds) in PLANS.items()
        if task_id in BASE_TASKS
    }


def many_tasks(single: Path, out: Path, count: int) -> list[str]:
    """An MCP-Bench task file of `count` tasks: copies of the base tasks (`<id>_r<k>`), interleaved."""
    data = json.loads(single.read_text())
    by_id = {t["task_id"]: (group["server_name"], t) for group in data["server_tasks"] for t in group["tasks"]}
    groups: dict[str, list[dict[str, Any]]] = {}
    ids = []
    for k in range(count // len(BASE_TASKS) + 1):
        for base in BASE_TASKS:
            if len(ids) < count:
                server, task = by_id[base]
                ids.append(f"{base}_r{k}")
                groups.setdefault(server, []).append({**task, "task_id": ids[-1]})
    data["server_tasks"] = [{"server_name": s, "tasks": t} for s, t in groups.items()]
    data["total_tasks"] = count
    out.write_text(json.dumps(data))
    return [t["task_id"] for t in sum(groups.values(), [])]  # in file order


def mcpgw_run(
    tasks: Path, answers: Path, cassettes: Path, *more: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    from tests.conftest import ROOT

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "run",
            str(tasks),
            "--model",
            "scripted-1",
            "--strategy",
            "tc",
            "--max-rounds",
            "6",
            "--concurrency",
            "2",
            "--answers",
            str(answers),
            "--cassettes-dir",
            str(cassettes),
            *more,
        ],
        cwd=ROOT,
        env={**(env if env is not None else os.environ), **RAY_ENV},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def record_args(model: ScriptedModel) -> list[str]:
    from tests.conftest import ROOT

    return [
        "--mode",
        "record",
        "--config",
        str(ROOT / "servers.lock.yaml"),
        "--servers",
        *SERVERS,
        "--llm-base-url",
        model.base_url,
    ]
