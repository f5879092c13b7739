"""MCP-Bench's six-dimension rubric judge, with shuffled prompts averaged over runs.

Six sub-dimensions scored 1-10, in three axes (each the mean of its pair):
task completion (task fulfillment, information grounding), tool usage (tool
appropriateness, parameter accuracy), planning effectiveness (dependency
awareness, parallelism and efficiency). Axis scores are normalised to [0, 1]
by dividing by 10.

Robustness, as the benchmark does it: for each of 5 runs the order of the
axes, of the sub-dimensions inside each axis and of the score-range lines
inside each sub-dimension is shuffled independently. Each score is the mean
over the runs whose answer parsed and carried that score (MCP-Bench averages
per field). Shuffles are seeded from the task id and run index, so
re-scoring builds the same prompts and replays the same recordings.

The rubric wording below is ours, written from the criteria.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from mcpgw.evaluator.judges.client import JudgeClient
from mcpgw.evaluator.judges.parsing import extract_object, number_in
from mcpgw.evaluator.judges.prompting import Template

RUNS = 5
FIELDS = {"fuzzy_task", "concrete_task", "dependency_analysis", "final_answer", "rounds", "trace", "tools", "rubric"}


def _bands(things: str, verdict: str) -> dict[str, str]:
    """Score bands by the share of `things` for which `verdict` holds (the benchmark's four bands)."""
    return {
        "1-3": f"a third or less of {things} {verdict}",
        "4-6": f"roughly 40-60% of {things} {verdict}",
        "7-8": f"roughly 70-80% of {things} {verdict}",
        "9-10": f"90% or more of {things} {verdict}",
    }


# axis -> sub-dimension -> (answer key, what to measure, {score band: description})
RUBRIC: dict[str, dict[str, tuple[str, str, dict[str, str]]]] = {
    "Task completion": {
        "Task fulfillment": (
            "task_fulfillment",
            "the share of the concrete task's requirements the final answer fully meets",
            _bands("the requirements", "are fully met"),
        ),
        "Information grounding": (
            "grounding",
            "the share of factual claims in the answer that tool outputs in the trace support",
            _bands("the claims", "are backed by tool output"),
        ),
    },
    "Tool usage": {
        "Tool appropriateness": (
            "tool_appropriateness",
            "the share of subtasks handled with the best-suited available tool",
            _bands("the tool choices", "fit their subtask well"),
        ),
        "Parameter accuracy": (
            "parameter_accuracy",
            "the share of calls whose arguments are correct and complete",
            _bands("the calls", "have fully correct arguments"),
        ),
    },
    "Planning effectiveness": {
        "Dependency awareness": (
            "dependency_awareness",
            "the share of dependency chains (one step's output feeding a later step) "
            "carried out in a valid order with the right data passed on",
            _bands("the dependency chains", "are handled correctly"),
        ),
        "Parallelism and efficiency": (
            "parallelism_and_efficiency",
            "how much work was redundant and how many independent steps were batched together",
            {
                "1-3": "over 70% of calls are redundant, or under 30% of independent steps ran together",
                "4-6": "40-60% of calls are redundant, or 40-60% of independent steps ran together",
                "7-8": "20-30% of calls are redundant and 70-80% of independent steps ran together",
                "9-10": "under 10% of calls are redundant and 90% or more of independent steps ran together",
            },
        ),
    },
}
SCORE_KEYS = [key for axis in RUBRIC.values() for key, _, _ in axis.values()]
AXES = {
    "task_completion": ("task_fulfillment", "grounding"),
    "tool_usage": ("tool_appropriateness", "parameter_accuracy"),
    "planning_effectiveness": ("dependency_awareness", "parallelism_and_efficiency"),
}

SYSTEM = (
    "You evaluate how well an AI agent carried out a multi-step task with tools from several MCP servers. "
    "Score from evidence only; fluent or nicely formatted writing earns nothing by itself."
)

USER = """## Task as the agent saw it (deliberately vague)
{fuzzy_task}

## Concrete version of the task (hidden from the agent; judge completion and tool use against it)
{concrete_task}

## Dependency analysis (hidden from the agent; which steps feed which)
{dependency_analysis}

## Agent's final answer
{final_answer}

## Execution: {rounds} rounds; tool calls in order
{trace}

## Tools that were available
{tools}

## Rubric: score each sub-dimension from 1 to 10
First estimate the proportion the sub-dimension asks about, then pick the score from its range.
Use proportions, not absolute counts: a long task with a few slips can score as well as a short clean one.
A step counts as done only if it is done right; when unsure between two scores, take the lower.

{rubric}

Reply with one JSON object and nothing else, holding a short reason and an integer score for each:
{{"task_fulfillment_reasoning": "...", "task_fulfillment": 0, "grounding_reasoning": "...", "grounding": 0,
"tool_appropriateness_reasoning": "...", "tool_appropriateness": 0, "parameter_accuracy_reasoning": "...",
"parameter_accuracy": 0, "dependency_awareness_reasoning": "...", "dependency_awareness": 0,
"parallelism_and_efficiency_reasoning": "...", "parallelism_and_efficiency": 0}}"""

BUILTIN = Template(SYSTEM, USER.replace("{{", "{").replace("}}", "}"), "builtin")


def shuffled_rubric(rng: random.Random) -> str:
    """The rubric text with axes, sub-dimensions and range lines each in a fresh random order."""
    parts = []
    axes = list(RUBRIC)
    rng.shuffle(axes)
    for axis in axes:
        parts.append(f"### {axis}")
        subs = list(RUBRIC[axis])
        rng.shuffle(subs)
        for number, sub in enumerate(subs, 1):
            key, measure, ranges = RUBRIC[axis][sub]
            lines = list(ranges.items())
            rng.shuffle(lines)
            parts.append(f'{number}. {sub} (answer key "{key}"): {measure}.')
            parts.extend(f"   - {span}: {text}" for span, text in lines)
        parts.append("")
    return "\n".join(parts).rstrip()


def run_seed(task_id: str, run: int, seed: int = 0) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{task_id}:{run}".encode()).digest()[:8], "big")


def combine(parsed: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-field mean over the runs carrying that field; then axes and normalisation."""
    scores: dict[str, float | None] = {}
    for key in SCORE_KEYS:
        values = [v for v in (number_in(p, key, 0, 10) for p in parsed) if v is not None]
        scores[key] = sum(values) / len(values) if values else None
    axes: dict[str, float | None] = {}
    for axis, (a, b) in AXES.items():
        axes[axis] = None if scores[a] is None or scores[b] is None else (scores[a] + scores[b]) / 2 / 10
    present = [v for v in scores.values() if v is not None]
    return {
        "scores": scores,
        "axes": axes,
        "overall": sum(present) / len(present) / 10 if len(present) == len(SCORE_KEYS) else None,
    }


async def judge_rubric(
    client: JudgeClient,
    *,
    task_id: str,
    values: dict[str, Any],
    runs: int = RUNS,
    seed: int = 0,
    template: Template | None = None,
) -> dict[str, Any]:
    """values: fuzzy_task, concrete_task, dependency_analysis, final_answer, rounds, trace, tools."""
    template = template or BUILTIN
    parsed, keys = [], []
    for run in range(runs):
        rubric = shuffled_rubric(random.Random(run_seed(task_id, run, seed)))
        messages = template.render({**{k: str(v) for k, v in values.items()}, "rubric": rubric})
        exchange = await client.complete(messages, what=f"rubric run {run + 1} of {task_id!r}", salt={"run": run})
        keys.append(exchange.key)
        obj = extract_object(exchange.text)
        if obj is not None and any(number_in(obj, k, 0, 10) is not None for k in SCORE_KEYS):
            parsed.append(obj)
    result = combine(parsed)
    return {**result, "runs": runs, "parsed_runs": len(parsed), "keys": keys}
