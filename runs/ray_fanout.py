"""`mcpgw run --ray [ADDRESS]`: the run's tasks as Ray tasks over a cluster, one gateway per node.

The driver connects to the cluster, starts a gateway on every node with room for a task
(runs.ray_node.NodeGateway, pinned to its node), and submits each task as a Ray task; Ray
places it by its resources (`--ray-task-cpus` each), and it talks to its node's gateway over
loopback. Answers come back to the driver, which appends them to answers.jsonl as they
arrive (as a local run does), so a resumed run keeps them. A task whose node died, or whose
gateway went with it, runs again elsewhere as the next attempt (`<task>~2`, runs.attempts),
in a lane of its own. Each gateway writes its own cassette part on the cassettes folder,
which every node must see at the same path (shared storage); the parts are merged into
`--cassette` (or the replay's log cassette) at the end (runs.cassette_parts). Replay reads
the recording from that folder too, read-only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.runs.answers import FINISHED, AnswersFile, read_finished
from mcpgw.runs.attempts import final_attempts, highest_attempts
from mcpgw.runs.cassette_parts import merge_parts, part_paths, parts_dir
from mcpgw.runs.report import Progress, summary
from mcpgw.runs.runner import RunOptions, RunResult
from mcpgw.runs.tasks import RunTask, run_base

LOST_LIMIT = 3  # attempts lost with their node before a task is given up as an error


def import_ray(address: str) -> Any:
    host = address.removeprefix("ray://").rpartition(":")[0].strip("[]")
    if host in ("127.0.0.1", "localhost", "::1"):
        # A cluster on this machine's loopback (`ray start --head --node-ip-address 127.0.0.1`): without
        # this, Ray rewrites a loopback address to the machine's outward one, where nothing listens.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise GatewayError("--ray needs Ray on this machine and every node: pip install 'mcpgw[ray]'") from None
    return ray


def connect(ray: Any, address: str) -> None:
    """Ray's own address forms: `auto`, `host:port` (the head's GCS), `ray://host:port` (Ray Client).
    A host:port is probed first: ray.init would retry an unreachable one for minutes."""
    target = address.removeprefix("ray://")
    if address not in ("auto", "local"):
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise GatewayError(f"--ray {address}: use auto, HOST:PORT or ray://HOST:PORT")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
        except OSError as exc:
            raise GatewayError(f"--ray {address}: no Ray cluster answering there ({exc.strerror or exc})") from None
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise GatewayError(f"--ray {address}: cannot join the cluster ({str(exc).splitlines()[0]})") from None


def _with(serve_args: list[str], **values: str) -> list[str]:
    """serve_args with these options set (replaced when present, added otherwise)."""
    out = list(serve_args)
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if flag in out:
            out[out.index(flag) + 1] = value
        else:
            out += [flag, value]
    return out


def run_on_ray(
    args: argparse.Namespace, tasks: list[RunTask], options: RunOptions, serve_args: list[str], log_name: str
) -> int:

    if args.gateway:
        raise GatewayError("--ray starts a gateway on every node: leave out --gateway")
    if args.ray_task_cpus <= 0:
        raise GatewayError("--ray-task-cpus must be positive")
    ray = import_ray(args.ray)
    cassettes = Path(args.cassettes_dir).resolve()
    target = cassettes / log_name
    recording = None
    if args.mode in ("replay", "hybrid"):
        from mcpgw.cassette.paths import cassette_path

        recording = cassette_path(cassettes, args.cassette).resolve()
        if not (recording / "data.mdb").is_file():
            raise GatewayError(f"no cassette {args.cassette!r} in {cassettes}/ (the recording to replay)")
    if args.config:
        serve_args = _with(serve_args, config=str(Path(args.config).resolve()))
    answers_path = Path(args.answers).resolve() if args.answers else Path(f"{target}.answers.jsonl")
    connect(ray, args.ray)
    started_at = time.time()
    try:
        fanout = _Fanout(ray, args, options, serve_args, target, recording)
        fanout.start_gateways()
        try:
            result = fanout.run(tasks, answers_path, Progress())
        finally:
            fanout.stop_gateways()
        merge_parts(target)
        from mcpgw.runs.manifest import write_manifest

        status = fanout.status
        write_manifest(
            target,
            {
                "started": started_at,
                "ended": time.time(),
                "mode": status.get("mode"),
                "model": args.model,
                "strategy": args.strategy,
                "run_prefix": args.run_prefix,
                "repeat": getattr(args, "repeat", 1),
                "tasks": sorted({t.source for t in tasks}),
                "answers_file": str(answers_path),
                "answers": result.answers,
                "timings": result.timings,
                "ray_nodes": len(fanout.gateways),
                "servers": {sid: info.get("title") or sid for sid, info in status.get("servers", {}).items()},
            },
        )
    finally:
        ray.shutdown()
    return summary(result, answers_path, str(target), time.time() - started_at)


class _Fanout:
    def __init__(
        self,
        ray: Any,
        args: argparse.Namespace,
        options: RunOptions,
        serve_args: list[str],
        target: Path,
        recording: Path | None,
    ) -> None:
        self.ray, self.args, self.options, self.serve_args = ray, args, options, serve_args
        self.target, self.recording = target, recording
        self.stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
        self.actors: dict[str, Any] = {}  # node id -> its NodeGateway actor
        self.gateways: dict[str, str] = {}  # node id -> its gateway's loopback URL (on that node)
        self.status: dict[str, Any] = {}

    # -- gateways ------------------------------------------------------------------------

    def start_gateways(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from mcpgw.runs.ray_node import NodeGateway

        cpus = self.args.ray_task_cpus
        nodes = sorted(
            (n for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= cpus),
            key=lambda n: n["NodeID"],
        )
        self._nodes = nodes
        if not nodes:
            raise GatewayError(f"no node of the cluster has {cpus:g} CPU for a task (--ray-task-cpus)")
        folder = parts_dir(self.target)
        folder.mkdir(parents=True, exist_ok=True)
        logs = self.target.with_name(self.target.name + ".gateway-logs")  # kept: what each node's gateway said
        actor_class = self.ray.remote(NodeGateway)
        for i, node in enumerate(nodes):
            part = f"{self.stamp}-n{i}"
            names = (
                {"cassette": part}
                if self.recording is None
                else {"cassette": str(self.recording), "log_cassette": part}
            )
            node_args = _with(self.serve_args, cassettes_dir=str(folder), **names)
            self.actors[node["NodeID"]] = actor_class.options(
                num_cpus=0,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote(node_args, str(logs / f"{part}.log"), self.args.mode in ("record", "live"))
        failures = []
        for node in nodes:
            try:
                started = self.ray.get(self.actors[node["NodeID"]].started.remote(), timeout=300)
            except self.ray.exceptions.RayError as exc:
                started = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
            if started["error"]:
                failures.append(f"node {node.get('NodeManagerAddress')} ({node['NodeID'][:8]}): {started['error']}")
            else:
                self.gateways[node["NodeID"]] = started["base"]
        if failures:
            self.stop_gateways()
            for made in part_paths(self.target):  # this run's parts hold only the handshakes: nothing to keep
                if made.name.startswith(self.stamp):
                    shutil.rmtree(made, ignore_errors=True)
            with contextlib.suppress(OSError):
                parts_dir(self.target).rmdir()  # when empty
            raise GatewayError(failures[0] + (f" (and {len(failures) - 1} more node(s))" if len(failures) > 1 else ""))
        self.status = self.ray.get(self.actors[nodes[0]["NodeID"]].status.remote(), timeout=30)

    def stop_gateways(self) -> None:
        for actor in self.actors.values():
            try:
                self.ray.get(actor.stop.remote(), timeout=60)
            except self.ray.exceptions.RayError:
                pass  # its node is gone, and its gateway with it
            self.ray.kill(actor)
        self.actors.clear()

    def _alive(self) -> set[str]:
        return {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}

    # -- tasks ---------------------------------------------------------------------------

    def _plan(self, bases: list[str]) -> dict[str, int]:
        if self.recording is not None:
            final = final_attempts(self.recording)
            return {b: final.get(b, 1) for b in bases}
        if self.args.mode == "record":  # after the highest attempt in the cassette or any part left by a dead driver
            highest: dict[str, int] = {}
            for path in [self.target, *part_paths(self.target)]:
                for base, attempt in highest_attempts(path, set(bases)).items():
                    highest[base] = max(highest.get(base, 0), attempt)
            return {b: highest.get(b, 0) + 1 for b in bases}
        return {b: 1 for b in bases}

    def run(self, tasks: list[RunTask], answers_path: Path, progress: Any) -> RunResult:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from mcpgw.runs.ray_node import NoGatewayHere, run_task

        prefix = self.options.run_prefix
        kept = read_finished(answers_path)
        order = [run_base(prefix, t) for t in tasks]
        todo = [t for t in tasks if run_base(prefix, t) not in kept]
        attempts = self._plan([run_base(prefix, t) for t in todo])
        answers = AnswersFile(answers_path, {r: kept[r] for r in order if r in kept})
        result = RunResult([], skipped=len(tasks) - len(todo), status=self.status)
        remote = self.ray.remote(run_task).options(num_cpus=self.args.ray_task_cpus, max_retries=0)
        pending: dict[Any, tuple[RunTask, int, int]] = {}  # ref -> task, attempt, attempts lost so far
        turn = 0

        def submit(task: RunTask, attempt: int, lost: int, pinned: bool = False) -> None:
            nonlocal turn
            if not self.gateways:
                raise GatewayError(
                    "every node with a gateway has died; the answers so far are kept: "
                    "run the same command again when the cluster is back to resume"
                )
            chosen = remote
            if pinned:  # Ray chose a node without a gateway: send it to one that has one
                turn += 1
                node = sorted(self.gateways)[turn % len(self.gateways)]
                chosen = remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
            pending[chosen.remote(task, self.options, attempt, dict(self.gateways), time.time())] = (
                task,
                attempt,
                lost,
            )

        def lost_answer(task: RunTask, attempt: int, why: str) -> dict[str, Any]:
            from mcpgw.runs.attempts import run_id_of

            return {
                "run_id": run_id_of(run_base(prefix, task), attempt),
                "task_id": task.task_id,
                "attempt": attempt,
                "model": f"{self.options.model}/{self.options.strategy}",
                "strategy": self.options.strategy,
                "final_answer": "",
                "rounds": 0,
                "status": "error",
                "error": why,
                "tokens": {"prompt": 0, "completion": 0, "total": 0},
                "model_calls": 0,
                "tool_calls": 0,
            }

        progress.start(f"{self.options.strategy} x {self.options.model} on {len(self.gateways)} node(s)", len(todo))
        waiting = deque(todo)

        def submit_waiting() -> None:
            # Only as many tasks in flight as the gateway nodes can run at once: the rest wait here,
            # not in Ray's queue, so a task's submission-to-first-call time is Ray's own overhead.
            while waiting and len(pending) < self._window():
                task = waiting.popleft()
                submit(task, attempts[run_base(prefix, task)], 0)

        try:
            submit_waiting()
            while pending:
                ready, _ = self.ray.wait(list(pending), num_returns=1)
                task, attempt, lost = pending.pop(ready[0])
                try:
                    record, timing, node = self.ray.get(ready[0])
                except self.ray.exceptions.RayTaskError as exc:
                    if isinstance(exc.cause, NoGatewayHere):
                        submit(task, attempt, lost, pinned=True)
                        continue
                    record, timing, node = (
                        lost_answer(task, attempt, f"{type(exc.cause).__name__}: {exc.cause}"),
                        {},
                        "",
                    )
                except self.ray.exceptions.RayError as exc:  # the worker or its node died under the task
                    record, timing, node = None, {}, ""
                    why = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                if record is not None and record["status"] not in FINISHED and node and node not in self._alive():
                    record, why = None, "its node died"  # its gateway went first: the answer says nothing of the task
                if record is None:
                    self._forget_dead()
                    if lost + 1 < LOST_LIMIT and self.gateways:
                        submit(task, attempt + 1, lost + 1)  # a new attempt, in a lane of its own
                        continue
                    record = lost_answer(task, attempt, f"lost with its node {lost + 1} time(s): {why}")
                answers.add(record)
                if timing:
                    result.timings[record["run_id"]] = timing
                progress.advance()
                submit_waiting()
        finally:
            progress.finish()
            for ref in pending:
                self.ray.cancel(ref, force=True)
            result.answers = answers.finish(order)
        return result

    def _window(self) -> int:
        """Tasks the gateway nodes run at once: each node's CPUs over --ray-task-cpus."""
        cpus = {n["NodeID"]: n.get("Resources", {}).get("CPU", 0) for n in self._nodes if n["NodeID"] in self.gateways}
        return max(1, sum(int(c // self.args.ray_task_cpus) for c in cpus.values()))

    def _forget_dead(self) -> None:
        alive = self._alive()
        for node in [n for n in self.gateways if n not in alive]:
            del self.gateways[node]
