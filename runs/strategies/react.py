"""`react`: the text protocol MCP-AgentBench runs its agents with. Tools are
described in the prompt; each turn the model writes a Thought and either an
Action with a JSON Action Input, or a Final Answer. The harness runs the action
and replies with its Observation. Generation stops before "Observation:", so the
model never invents one."""

from __future__ import annotations

import re
from typing import Any

from mcpgw.runs.model import ChatModel, parse_arguments
from mcpgw.runs.strategies.base import Outcome, cut, describe_tools
from mcpgw.runs.tasks import RunTask
from mcpgw.runs.tools import TaskTools

PROMPT = """Solve the task below. You can use these tools:

{tools}

Work in steps. Each of your turns is exactly one of these two forms.

To use a tool:
Thought: what you know so far and what you need next
Action: the tool's name, exactly as listed
Action Input: the tool's arguments as one JSON object

When you can answer:
Thought: why you are done
Final Answer: the complete answer to the task

After an Action you will be sent its result as "Observation: ...". Never write an Observation yourself.

Task: {task}"""

FORMAT_REMINDER = (
    "Observation: Error: your reply had neither a Final Answer nor an Action with an Action Input. "
    "Reply with 'Action:' and 'Action Input:' lines, or with 'Final Answer:'."
)
OUT_OF_ROUNDS = "Observation: no more actions are possible. Reply now with your Final Answer."
OBSERVATION_LIMIT = 6000

_FINAL = re.compile(r"Final Answer\s*:\s*(.*)", re.S)
_ACTION = re.compile(r"Action\s*:\s*(.+?)\s*(?:\n|$)")
_INPUT = re.compile(r"Action Input\s*:\s*(.*)", re.S)


def parse_turn(text: str) -> tuple[str, Any]:
    """("final", answer) | ("action", (name, arguments text)) | ("invalid", None)."""
    action, final = _ACTION.search(text), _FINAL.search(text)
    if final and (not action or final.start() < action.start()):
        return "final", final.group(1).strip()
    if action:
        given = _INPUT.search(text, action.end())
        raw = given.group(1).strip() if given else ""
        raw = re.sub(r"^```(?:json)?\s*|\s*```$", "", raw)  # a fenced JSON block is still JSON
        return "action", (action.group(1).strip().strip("`"), raw)
    return "invalid", None


async def solve(task: RunTask, model: ChatModel, tools: TaskTools, max_rounds: int) -> Outcome:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": PROMPT.format(tools=describe_tools(tools.tools), task=task.prompt)}
    ]
    for round_no in range(1, max_rounds + 1):
        reply = await model.complete(messages, stop=["Observation:"])
        text = reply.content
        messages.append({"role": "assistant", "content": text})
        kind, value = parse_turn(text)
        if kind == "final":
            return Outcome(value, round_no, "ok")
        if kind == "invalid":
            messages.append({"role": "user", "content": FORMAT_REMINDER})
            continue
        name, raw = value
        arguments, problem = parse_arguments(raw)
        if problem is not None:
            result = f"Error: {problem}. Write the Action Input as one JSON object."
        else:
            result = await tools.call(name, arguments or {})
        messages.append({"role": "user", "content": "Observation: " + cut(result, OBSERVATION_LIMIT)})
    messages.append({"role": "user", "content": OUT_OF_ROUNDS})
    reply = await model.complete(messages, stop=["Observation:"])
    kind, value = parse_turn(reply.content)
    return Outcome(value if kind == "final" else reply.content.strip(), max_rounds, "max_rounds")
