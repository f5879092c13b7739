"""MCPEval's LLM judger: a trajectory judgement and a completion judgement.

Each judgement asks for a 0-1 score per aspect; its score is the mean of the
aspects that came back as numbers in [0, 1] (None when none did).

- trajectory: planning, execution flow, tool selection, tool usage,
  adaptability, efficiency, context awareness;
- completion: requirement coverage, accuracy, completeness, usefulness.

When the ground truth is known, the expected calls and response are shown as
a reference (one valid way to do the task, not the only one).
"""

from __future__ import annotations

from typing import Any

from mcpgw.evaluator.judges.client import JudgeClient
from mcpgw.evaluator.judges.parsing import extract_object, number_in
from mcpgw.evaluator.judges.prompting import Template

TRAJECTORY = {
    "planning": "did the agent break the task into sensible steps before and while acting",
    "execution_flow": "do the calls follow a coherent order, each building on what came before",
    "tool_selection": "were the right tools chosen for each step",
    "tool_usage": "were the arguments correct, complete and well formed",
    "adaptability": "did the agent recover sensibly from errors or unexpected results",
    "efficiency": "was the task done without redundant or wasted calls",
    "context_awareness": "did the agent use the information it already had (the request, earlier results)",
}
COMPLETION = {
    "requirement_coverage": "how many of the request's requirements the response addresses",
    "accuracy": "are the facts and values in the response correct and consistent with the tool results",
    "completeness": "is the response whole, with nothing important left unfinished",
    "usefulness": "would the response actually help the person who asked",
}
FIELDS = {"task", "trajectory", "reference_trajectory", "response", "reference_response", "aspects"}

SYSTEM = "You assess AI agents that use tools. Score strictly from the evidence given; 0 is worst, 1 is best."

USER = """## Task
{task}

## The agent's tool calls, in order
{trajectory}

## Reference tool calls (one valid way to do it)
{reference_trajectory}

## The agent's final response
{response}

## Reference response
{reference_response}

## What to score
Give each aspect below a score between 0 and 1 (decimals allowed):
{aspects}

Reply with one JSON object and nothing else: one numeric field per aspect key above, plus "comments"
with a sentence or two."""

BUILTIN = Template(SYSTEM, USER, "builtin")


def _aspect_text(aspects: dict[str, str]) -> str:
    return "\n".join(f"- {key}: {question}" for key, question in aspects.items())


def score_aspects(obj: dict[str, Any] | None, aspects: dict[str, str]) -> dict[str, Any]:
    values = {key: (number_in(obj, key, 0.0, 1.0) if obj else None) for key in aspects}
    present = [v for v in values.values() if v is not None]
    return {
        "score": sum(present) / len(present) if present else None,
        "aspects": values,
        "comments": str(obj.get("comments", "")) if obj else "unparseable judge answer",
    }


async def judge_aspects(
    client: JudgeClient, *, task_id: str, kind: str, values: dict[str, str], template: Template | None = None
) -> dict[str, Any]:
    """kind: "trajectory" or "completion". values: task, trajectory, reference_trajectory, response,
    reference_response (missing references are shown as such)."""
    aspects = TRAJECTORY if kind == "trajectory" else COMPLETION
    filled = {
        "reference_trajectory": "(not given)",
        "reference_response": "(not given)",
        **values,
        "aspects": _aspect_text(aspects),
    }
    messages = (template or BUILTIN).render(filled)
    exchange = await client.complete(messages, what=f"the {kind} judgement of {task_id!r}", salt={"judgement": kind})
    result = score_aspects(extract_object(exchange.text), aspects)
    return {**result, "key": exchange.key}


async def judge_trajectory_and_completion(
    client: JudgeClient, *, task_id: str, values: dict[str, str], template: Template | None = None
) -> dict[str, Any]:
    trajectory = await judge_aspects(client, task_id=task_id, kind="trajectory", values=values, template=template)
    completion = await judge_aspects(client, task_id=task_id, kind="completion", values=values, template=template)
    return {"trajectory": trajectory, "completion": completion}
