"""`mcpbench`: MCP-Bench's agent loop. Each round the model sees the task, the
tools and everything executed so far, and answers with a JSON plan: whether to
go on and which tool calls to make now. A round's calls run in parallel. The
loop ends when the plan says it is done, plans nothing, or the round limit is
reached; a last prompt then synthesises the final answer from all results."""

from __future__ import annotations

import json
from typing import Any

import anyio

from mcpgw.runs.model import ChatModel, parse_arguments
from mcpgw.runs.strategies.base import Outcome, cut, describe_tools
from mcpgw.runs.tasks import RunTask
from mcpgw.runs.tools import TaskTools

PLAN = """You are working on a task with tools. Decide what to do in this round.

Task:
{task}

Tools:
{tools}

Executed so far:
{history}

Reply with one JSON object and nothing else:
{{"reasoning": "what is known and what is still missing",
  "should_continue": true or false,
  "planned_tools": [{{"tool": "exact tool name", "parameters": {{...}}}}]}}
Plan only calls that do not depend on each other's results: they run at the same time. Set
"should_continue" to false, with no planned tools, once the results are enough to answer the task."""

SYNTHESIS = """Answer the task from the tool results below.

Task:
{task}

Tool results:
{history}

Write the final answer: complete, self-contained, and based only on these results (say what could not be found)."""

RESULT_LIMIT = 3000  # per call, in the running history
HISTORY_LIMIT = 40000


def read_plan(text: str) -> tuple[bool, list[tuple[str, Any]], str | None]:
    """(go on?, [(tool, parameters or a problem text)], problem with the plan itself)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return False, [], "the reply held no JSON object"
    try:
        plan = json.loads(text[start : end + 1])
    except ValueError as exc:
        return False, [], f"the plan is not valid JSON ({exc})"
    if not isinstance(plan, dict):
        return False, [], "the plan is not a JSON object"
    calls = []
    for item in plan.get("planned_tools") or []:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            calls.append(("?", "a planned call without a 'tool' name"))
            continue
        params = item.get("parameters", {})
        if isinstance(params, str):  # some models write the parameters as JSON text
            params, problem = parse_arguments(params)
            if problem:
                calls.append((item["tool"], problem))
                continue
        calls.append((item["tool"], params if isinstance(params, dict) else "parameters must be a JSON object"))
    return bool(plan.get("should_continue")) and bool(calls), calls, None


async def solve(task: RunTask, model: ChatModel, tools: TaskTools, max_rounds: int) -> Outcome:
    history: list[str] = []
    catalog = describe_tools(tools.tools)
    status, rounds = "ok", 0
    for round_no in range(1, max_rounds + 1):
        rounds = round_no
        prompt = PLAN.format(task=task.prompt, tools=catalog, history=_history(history))
        reply = await model.complete([{"role": "user", "content": prompt}])
        go_on, calls, problem = read_plan(reply.content)
        if problem is not None:
            history.append(f"Round {round_no}: the plan could not be read: {problem}")
            continue
        if calls:
            results = await _run_parallel(tools, calls)
            history += [
                f"Round {round_no}: {tool}({_args(params)}) -> {cut(result, RESULT_LIMIT)}"
                for (tool, params), result in zip(calls, results)
            ]
        if not go_on:
            break
    else:
        status = "max_rounds"
    prompt = SYNTHESIS.format(task=task.prompt, history=_history(history))
    reply = await model.complete([{"role": "user", "content": prompt}])
    return Outcome(reply.content, rounds, status)


async def _run_parallel(tools: TaskTools, calls: list[tuple[str, Any]]) -> list[str]:
    results = [""] * len(calls)

    async def one(index: int, tool: str, params: Any) -> None:
        if isinstance(params, str):
            results[index] = f"Error: {params}"
        else:
            results[index] = await tools.call(tool, params)

    async with anyio.create_task_group() as tg:
        for index, (tool, params) in enumerate(calls):
            tg.start_soon(one, index, tool, params)
    return results


def _args(params: Any) -> str:
    return json.dumps(params, ensure_ascii=False, sort_keys=True) if isinstance(params, dict) else "?"


def _history(history: list[str]) -> str:
    text = "\n".join(history) or "(nothing yet)"
    return text if len(text) <= HISTORY_LIMIT else "... (earlier rounds cut)\n" + text[-HISTORY_LIMIT:]
