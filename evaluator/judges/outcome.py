"""MCP-AgentBench's MCP-Eval: an outcome-only, pass/fail judgement.

The judge sees the user's query, the annotated reference answer and the
agent's final answer, never the trajectory. The criteria (evaluator/METRICS.md), in our
own words: the answer passes when it carries specific external data that meets
the core need (that data is itself the evidence tools were used; sufficiency
over completeness; format and verbosity do not matter); it fails when it is
only general knowledge, misses the core request, or declares the task
impossible / refuses.
"""

from __future__ import annotations

from typing import Any

from mcpgw.evaluator.judges.client import JudgeClient
from mcpgw.evaluator.judges.parsing import parse_pass_fail
from mcpgw.evaluator.judges.prompting import Template

FIELDS = {"query", "reference_answer", "answer"}

SYSTEM = (
    "You grade the final answers of an AI assistant that could use external tools through MCP servers. "
    "You judge only the outcome; you do not see, and must not guess at, the steps the assistant took."
)

USER = """Decide whether the assistant's final answer resolves the user's request.

## User request
{query}

## Reference answer
(Written by annotators who used the same tools. Live data may have changed since, so treat it as
showing what kind of information is needed, not as the only acceptable values.)
{reference_answer}

## Assistant's final answer
{answer}

## How to grade
PASS when the answer delivers concrete, specific information that has to come from an external tool or
service (figures, records, identifiers, results of a lookup or computation); that information is itself
the evidence that tools were used. It must satisfy the central need of the request. Meeting the central
need is enough: missing side details do not fail an answer. Ignore style, formatting, length and verbosity.

FAIL when the answer:
- gives only general or background knowledge that needs no tool, or advice instead of the requested data;
- misses or misreads the central request;
- says the request cannot be done, refuses, asks the user to do it, or is empty.

Reply with one JSON object and nothing else:
{"reasoning": "<two or three sentences>", "verdict": "pass" or "fail"}"""

BUILTIN = Template(SYSTEM, USER, "builtin")


async def judge_outcome(
    client: JudgeClient,
    *,
    task_id: str,
    query: str,
    reference_answer: str,
    answer: str,
    template: Template | None = None,
) -> dict[str, Any]:
    """{"passed": True/False/None, "reason", "key"}; None when the answer could not be parsed."""
    messages = (template or BUILTIN).render(
        {"query": query, "reference_answer": reference_answer, "answer": answer if answer.strip() else "(empty answer)"}
    )
    exchange = await client.complete(messages, what=f"the pass/fail judgement of {task_id!r}")
    passed, reason = parse_pass_fail(exchange.text)
    return {"passed": passed, "reason": reason, "key": exchange.key}
