"""What to play: the hand-written calls, generated ones for unwritten tools, every prompt; the newcomer's reads."""

from __future__ import annotations

from datetime import date

import anyio
import default_session as session
from default_session import Step
from mcp import Client

from .playing import _all
from .settings import CONFIG


async def plan_session(url: str) -> tuple[list[Step], list[tuple[str, str]], int, int]:
    """The steps to play, from what the gateway exposes: the hand-written calls, generated ones
    for any tool nobody wrote a call for, every prompt. Also returns the skipped tools."""
    with anyio.fail_after(60):
        async with Client(url, mode="legacy") as client:
            tools = await _all(client.list_tools, "tools")
            prompts = await _all(client.list_prompts, "prompts")
    exposed = {t.name: t for t in tools}
    steps: list[Step] = [Step("list_tools")]
    for step in session.hand_written(date.today()):
        if step.kind == "tool" and step.target not in exposed:
            print(f"warning: {step.target} is not exposed by this gateway; its hand-written call is dropped")
            continue
        steps.append(step)
    covered = {s.target for s in steps if s.kind == "tool"}
    skipped = [(name, session.SKIP[name]) for name in exposed if name in session.SKIP]
    for name, spec in exposed.items():
        if name not in covered and name not in session.SKIP:
            steps.append(Step("tool", name, session.arguments_from_schema(spec.input_schema), generated=True))
    tail = session.resources_and_prompts()
    written_prompts = {s.target for s in tail if s.kind == "prompt"}
    for prompt in prompts:
        if prompt.name not in written_prompts:
            args = {a.name: "example" for a in prompt.arguments or [] if a.required}
            tail.insert(next(i for i, s in enumerate(tail) if s.kind == "complete"), Step("prompt", prompt.name, args))
    known_prompts = {p.name for p in prompts}
    steps += [s for s in tail if s.kind not in ("prompt", "complete") or s.target in known_prompts]
    read_only = {t.name for t in tools if t.annotations is not None and t.annotations.read_only_hint is True}
    return steps, skipped, len(tools), len(prompts), read_only


def newcomer_reads(steps: list[Step], read_only: set[str]) -> list[Step]:
    """The session's reads on servers whose state replay tracks (not declared stateless): read-only
    tool calls, resource reads, prompts, completions. Played first, in a lane of their own, so they
    are recorded at the state a new run starts in, and a newcomer's reads replay in any order.
    (Calls to stateless servers need no such pass: their keys never hold history.)"""
    from mcpgw.lock.config import load_config

    servers = load_config(CONFIG).servers

    def tracked(step: Step) -> bool:
        server = step.target.split("__", 1)[0]
        return server in servers and servers[server].tracked

    def read(step: Step) -> bool:
        if step.kind == "tool":
            return tracked(step) and step.target in read_only
        return step.kind in ("read", "prompt", "complete") and tracked(step)

    return [step for step in steps if read(step)]
