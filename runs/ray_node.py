"""What runs on each node of a Ray cluster for `mcpgw run --ray`: one gateway per node (an
actor owning a `mcpgw serve` process on a loopback port, started with the run's options),
and the tasks, which Ray places by its resources and which talk to their own node's gateway.

Imported by the Ray workers, so this module imports `ray` only inside the functions Ray
calls; the driver (runs.ray_fanout) wraps them with `ray.remote`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.runs.gateway_process import GatewayProcess
from mcpgw.runs.runner import RunOptions, run_one
from mcpgw.runs.tasks import RunTask
from mcpgw.runs.tools import ServerNames

UP = ("ready",)


class NodeGateway:
    """One node's gateway. A start failure is kept as a message (not raised), so the driver
    can say in one line which node could not serve and why."""

    def __init__(self, serve_args: list[str], log_path: str, need_servers: bool) -> None:
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()
        self.error: str | None = None
        self.process: GatewayProcess | None = None
        try:
            self.process = GatewayProcess(serve_args, Path(log_path), die_with_parent=True)
            if need_servers:
                self._check_servers()
        except (GatewayError, OSError) as exc:
            self.error = getattr(exc, "message", None) or str(exc)
            self.stop()

    def _check_servers(self) -> None:
        import httpx

        assert self.process is not None
        status = httpx.get(self.process.base + "/status", timeout=10).json()
        down = {sid: s for sid, s in status["servers"].items() if s["state"] not in UP}
        if down:
            sid, info = sorted(down.items())[0]
            raise GatewayError(
                f"server {sid} is {info['state']}: {info.get('reason') or 'no reason given'}"
                f" (install the lock's servers on every node: mcpgw servers install)"
            )

    def started(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "error": self.error,
            "base": self.process.base if self.process is not None and self.error is None else None,
        }

    def status(self) -> dict[str, Any]:
        import httpx

        assert self.process is not None
        return httpx.get(self.process.base + "/status", timeout=10).json()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


class NoGatewayHere(Exception):
    """Ray placed a task on a node that joined after the run started (it has no gateway)."""


def run_task(
    task: RunTask, options: RunOptions, attempt: int, gateways: dict[str, str], submitted: float
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """One attempt of one task on whichever node Ray chose: (answer record, timing, node id).
    timing["ray_overhead_s"]: from the driver's submission to this task's first gateway call."""
    import asyncio

    import ray

    node = ray.get_runtime_context().get_node_id()
    base = gateways.get(node)
    if base is None:
        raise NoGatewayHere(node)
    with gateway_slot(base, options.concurrency):
        started = time.time()
        record, timing = asyncio.run_coroutine_threadsafe(
            _run_one(task, base, options, attempt), _worker_loop()
        ).result()
    timing["ray_overhead_s"] = round(started - submitted, 4)
    timing["node"] = node
    return record, timing, node


# A Ray worker process runs many tasks one after another: they share one event loop (in a thread
# of its own) and, per gateway, one model client and one MCP HTTP client, as a local run's tasks
# do. A client made per task loads the TLS trust store each time (a sixth of a second, twice).
_loop: asyncio.AbstractEventLoop | None = None
_clients: dict[tuple[str, float], tuple[Any, Any, ServerNames]] = {}


def _worker_loop() -> asyncio.AbstractEventLoop:
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        threading.Thread(target=_loop.run_forever, name="mcpgw-tasks", daemon=True).start()
    return _loop


async def _run_one(
    task: RunTask, base: str, options: RunOptions, attempt: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    key = (base, options.task_timeout)
    if key not in _clients:
        import httpx
        from mcp.client.streamable_http import create_mcp_http_client
        from openai import AsyncOpenAI

        async with httpx.AsyncClient(timeout=10) as http:
            names = ServerNames.from_status((await http.get(base + "/status")).json())
        client = AsyncOpenAI(base_url=base + "/v1", api_key="mcpgw-run", max_retries=0, timeout=options.task_timeout)
        _clients[key] = (client, create_mcp_http_client(), names)
    client, mcp_http, names = _clients[key]
    return await run_one(task, base, client, names, options, mcp_http, attempt)


@contextlib.contextmanager
def gateway_slot(base: str, limit: int) -> Iterator[None]:
    """At most `limit` tasks at once against one gateway (`--concurrency`), across the Ray
    worker processes of its node: one lock file per slot, released by the kernel if a worker dies."""
    folder = Path(tempfile.gettempdir()) / f"mcpgw-slots-{base.rsplit(':', 1)[-1]}"
    folder.mkdir(exist_ok=True)
    handles = [os.open(folder / str(i), os.O_RDWR | os.O_CREAT, 0o600) for i in range(limit)]
    held = None
    try:
        while held is None:
            for fd in handles:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                held = fd
                break
            else:
                time.sleep(0.02)  # every slot taken: a task ends within seconds, poll briefly
        yield
    finally:
        for fd in handles:
            os.close(fd)  # closing releases the lock
