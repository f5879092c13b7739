"""Run tasks against a serving gateway: one run id per task, bounded concurrency,
a time limit per task, answers written as tasks finish, a progress bar."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

from mcpgw.runs.answers import AnswersFile, read_finished
from mcpgw.runs.attempts import run_id_of
from mcpgw.runs.distraction import DEFAULT_COUNT, DEFAULT_SEED, offered_servers
from mcpgw.runs.model import ChatModel, ModelFailed, ModelMiss
from mcpgw.runs.strategies import STRATEGIES
from mcpgw.runs.tasks import RunTask, run_base
from mcpgw.runs.tools import ServerNames, TaskTools, mcp_url


@dataclass
class RunOptions:
    strategy: str = "tc"
    model: str = "gpt-4o-mini"
    concurrency: int = 4
    task_timeout: float = 600.0
    max_rounds: int = 20
    temperature: float | None = None
    seed: int | None = None
    stream: bool = False
    run_prefix: str = ""
    model_retries: int = 2
    distraction_count: int = DEFAULT_COUNT  # MCP-Bench tasks: other servers' tools offered too
    distraction_seed: int = DEFAULT_SEED


@dataclass
class RunResult:
    answers: list[dict[str, Any]]
    timings: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: int = 0
    status: dict[str, Any] = field(default_factory=dict)  # the gateway's /status at the start


async def run_tasks(
    tasks: list[RunTask],
    base: str,
    options: RunOptions,
    answers_path: Path,
    progress: Any = None,
    attempts: dict[str, int] | None = None,
) -> RunResult:
    """`attempts`: task run id -> the attempt to run it as (runs.attempts.plan); 1 if absent."""
    from openai import AsyncOpenAI

    async with httpx.AsyncClient(timeout=10) as http:
        status = (await http.get(base.rstrip("/") + "/status")).json()
    names = ServerNames.from_status(status)
    kept = read_finished(answers_path)
    order = [run_base(options.run_prefix, t) for t in tasks]
    todo = [t for t in tasks if run_base(options.run_prefix, t) not in kept]
    answers = AnswersFile(answers_path, {r: kept[r] for r in order if r in kept})
    result = RunResult([], skipped=len(tasks) - len(todo), status=status)
    # The gateway holds the model's key; this client's key is a placeholder the gateway ignores.
    client = AsyncOpenAI(
        base_url=base.rstrip("/") + "/v1", api_key="mcpgw-run", max_retries=0, timeout=options.task_timeout
    )
    # One HTTP client for every task's MCP session: a client per session would load the TLS
    # trust store each time (a sixth of a second), even for plain http.
    from mcp.client.streamable_http import create_mcp_http_client

    mcp_http = create_mcp_http_client()
    limiter = anyio.CapacityLimiter(options.concurrency)
    if progress is not None:
        progress.start(f"{options.strategy} x {options.model}", len(todo))

    async def one(task: RunTask) -> None:
        async with limiter:
            attempt = (attempts or {}).get(run_base(options.run_prefix, task), 1)
            record, timing = await run_one(task, base, client, names, options, mcp_http, attempt)
        answers.add(record)
        result.timings[record["run_id"]] = timing
        if progress is not None:
            progress.advance()

    try:
        async with anyio.create_task_group() as tg:
            for task in todo:
                tg.start_soon(one, task)
    finally:
        if progress is not None:
            progress.finish()
        await client.close()
        await mcp_http.aclose()
        result.answers = answers.finish(order)
    return result


async def run_one(
    task: RunTask,
    base: str,
    client: Any,
    names: ServerNames,
    options: RunOptions,
    mcp_http: Any = None,
    attempt: int = 1,
) -> tuple[dict[str, Any], dict[str, Any]]:
    run_id = run_id_of(run_base(options.run_prefix, task), attempt)
    model = ChatModel(
        client,
        options.model,
        run_id,
        temperature=options.temperature,
        seed=options.seed,
        stream=options.stream,
        retries=options.model_retries,
    )
    started = time.perf_counter()
    final, rounds, status, error = "", 0, "ok", None
    box: dict[str, Any] = {"tool_calls": 0}
    try:
        try:
            await _attempt(task, base, run_id, model, names, options, box, mcp_http)
        except BaseExceptionGroup as group:  # the MCP client's task group wraps what ended the task
            raise _first_leaf(group) from None
        final, rounds, status = box["final"], box["rounds"], box["status"]
    except TimeoutError:
        status, error = "timeout", f"no final answer within {options.task_timeout:g}s"
    except ModelMiss as exc:
        status, error = "model_miss", str(exc)
    except ModelFailed as exc:
        status, error = "model_error", str(exc)
    except NoTools as exc:
        status, error = "no_tools", str(exc)
    except Exception as exc:  # noqa: BLE001 - the gateway went away, a protocol error: this task's end, not the run's
        status, error = "error", f"{type(exc).__name__}: {exc}"
    record = {
        "run_id": run_id,
        "task_id": task.task_id,
        "attempt": attempt,
        **({"repeat": task.repeat} if task.repeat is not None else {}),
        "model": f"{options.model}/{options.strategy}",
        "strategy": options.strategy,
        "final_answer": final,
        "rounds": rounds,
        "status": status,
        "tokens": model.usage.as_dict(),
        "model_calls": model.usage.calls,
        "tool_calls": box["tool_calls"],
    }
    if error is not None:
        record["error"] = error
    timing = {
        "elapsed_s": round(time.perf_counter() - started, 3),
        "model_calls": model.usage.calls,
        "retries": model.usage.retries,
    }
    return record, timing


async def _attempt(
    task: RunTask,
    base: str,
    run_id: str,
    model: ChatModel,
    names: ServerNames,
    options: RunOptions,
    box: dict[str, Any],
    mcp_http: Any,
) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(options.task_timeout):
        async with Client(streamable_http_client(mcp_url(base, run_id), http_client=mcp_http), mode="legacy") as mcp:
            task_tools = TaskTools(mcp, await _task_tools(mcp, task, names, options))
            try:
                outcome = await STRATEGIES[options.strategy](task, model, task_tools, options.max_rounds)
            finally:
                box["tool_calls"] = task_tools.calls
            box.update(final=outcome.final_answer, rounds=outcome.rounds, status=outcome.status)


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


class NoTools(Exception):
    """None of the task's servers is served by the gateway."""


async def _task_tools(mcp: Any, task: RunTask, names: ServerNames, options: RunOptions) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await mcp.list_tools(cursor=cursor)
        listed += [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    if task.servers is None:
        return listed
    if not names.matching(task.servers):  # resident and distraction servers alone are no task
        serving = ", ".join(f"{title} ({sid})" for sid, title in sorted(names.titles.items())) or "nothing"
        raise NoTools(
            f"none of the task's servers ({', '.join(sorted(task.servers))}) is served by the gateway "
            f"(serving: {serving})"
        )
    offered = offered_servers(task, names, options.distraction_count, options.distraction_seed)
    assert offered is not None  # a task that names its servers is offered some
    servers = names.matching(offered)
    return [t for t in listed if names.server_of(t["name"]) in servers]
