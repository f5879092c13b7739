"""Agent strategies: how a model and a task's tools turn a task into a final answer.

Each is `async solve(task, model, tools, max_rounds) -> Outcome`, written from
the papers' descriptions: `tc` native tool calling (the common harness loop),
`react` MCP-AgentBench's Thought/Action/Observation text protocol, `mcpbench`
MCP-Bench's planning rounds with parallel calls and a final synthesis."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcpgw.runs.strategies.base import Outcome
from mcpgw.runs.strategies.mcpbench import solve as mcpbench
from mcpgw.runs.strategies.react import solve as react
from mcpgw.runs.strategies.tc import solve as tc

Strategy = Callable[..., Awaitable[Outcome]]
STRATEGIES: dict[str, Strategy] = {"tc": tc, "react": react, "mcpbench": mcpbench}

__all__ = ["STRATEGIES", "Outcome", "Strategy"]


def get(name: str) -> Any:
    return STRATEGIES[name]
