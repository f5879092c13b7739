"""`tc`: native tool calling. The model gets the tools as functions; each reply's
tool calls are run in order and their results sent back, until it answers in
text or the rounds run out (then it is asked to answer without tools)."""

from __future__ import annotations

from typing import Any

from mcpgw.runs.model import ChatModel, parse_arguments
from mcpgw.runs.strategies.base import Outcome
from mcpgw.runs.tasks import RunTask
from mcpgw.runs.tools import TaskTools

SYSTEM = (
    "You complete the user's task using the functions you are given. Use them for any fact, lookup or "
    "computation you need, and check what they return. When you have everything, reply with the final "
    "answer to the task, complete and self-contained, and call no more functions."
)
OUT_OF_ROUNDS = (
    "No more function calls are possible. Using only what the functions have returned so far, "
    "give your final answer to the task now."
)


async def solve(task: RunTask, model: ChatModel, tools: TaskTools, max_rounds: int) -> Outcome:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task.prompt}]
    specs = tools.specs()
    for round_no in range(1, max_rounds + 1):
        reply = await model.complete(messages, tools=specs or None)
        messages.append(reply.as_message())
        if not reply.tool_calls:
            return Outcome(reply.content, round_no, "ok")
        for call in reply.tool_calls:
            arguments, problem = parse_arguments(call.arguments)
            if problem is not None:  # never sent: the gateway would only see a guess at what was meant
                result = f"Error: {problem}. Call {call.name} again with a JSON object as arguments."
            else:
                result = await tools.call(call.name, arguments or {})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    messages.append({"role": "user", "content": OUT_OF_ROUNDS})
    reply = await model.complete(messages)
    return Outcome(reply.content, max_rounds, "max_rounds")
