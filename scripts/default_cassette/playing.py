"""Playing steps through the SDK client in one session: one observation (result or error) per step."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
from default_session import Step
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference

from .settings import STEP_TIMEOUT


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})


async def _all(method: Any, key: str) -> list[Any]:
    items, cursor = [], None
    for _ in range(100):
        page = await method(cursor=cursor)
        items += getattr(page, key)
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def play(url: str, steps: list[Step], mode: str) -> list[dict[str, Any]]:
    """Play the steps in one client session; one observation per step (result or error)."""
    observations: list[dict[str, Any]] = []
    log_messages = Counter()

    async def on_log(params: Any) -> None:
        log_messages[getattr(params, "level", "?")] += 1

    async with Client(url, mode=mode, logging_callback=on_log) as client:
        for step in steps:
            seen: list[list[Any]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append([progress, total, message])  # noqa: B023  # the request ends within this iteration

            observation: dict[str, Any] = {"step": step.label()}
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    observation["result"] = await _request(client, step, on_progress if step.progress else None)
            except MCPError as exc:
                observation["error"] = {"code": exc.code, "message": exc.message}
            except TimeoutError:
                observation["transport_error"] = f"no answer within {STEP_TIMEOUT:.0f}s"
            if step.progress:
                observation["progress"] = seen
            observations.append(observation)
    return observations


async def _request(client: Client, step: Step, on_progress: Any) -> Any:
    if step.kind == "tool":
        return dump(await client.call_tool(step.target, step.args, progress_callback=on_progress))
    if step.kind == "list_tools":
        return [dump(t) for t in await _all(client.list_tools, "tools")]
    if step.kind == "list_resources":
        return [dump(r) for r in await _all(client.list_resources, "resources")]
    if step.kind == "list_templates":
        return [dump(t) for t in await _all(client.list_resource_templates, "resource_templates")]
    if step.kind == "list_prompts":
        return [dump(p) for p in await _all(client.list_prompts, "prompts")]
    if step.kind == "read":
        return dump(await client.read_resource(step.target))
    if step.kind == "prompt":
        return dump(await client.get_prompt(step.target, step.args or None))
    if step.kind == "complete":
        ref = PromptReference(type="ref/prompt", name=step.target)
        return dump(await client.complete(ref, step.args["argument"], step.args.get("context")))
    raise ValueError(f"unknown step kind {step.kind!r}")
