"""A scripted model for MCP-Bench's own runner, served the way the tests serve models.

The runner asks a model four kinds of question and parses each answer in its own way. The kind is read
from the answer format the prompt asks for, not from the prompt's wording:
- planning (the prompt asks for `should_continue` / `planned_tools` JSON): round 1 plans the calls the
  test scripted for the task (found by a marker in the task text), later rounds stop;
- judging (asks for `task_fulfillment` ... JSON): six scores derived from a digest of the prompt, so a
  prompt shuffled differently would be a different question with a different answer;
- summarizing (asks for `SUMMARIZED CONTENT:`): the content's first line;
- anything else (the final synthesis): a short answer naming the task.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tests.llm.scripted_model import ScriptedModel

SCORES = (
    "task_fulfillment",
    "grounding",
    "tool_appropriateness",
    "parameter_accuracy",
    "dependency_awareness",
    "parallelism_and_efficiency",
)


class MCPBenchModel(ScriptedModel):
    def __init__(self, plans: dict[str, list[dict[str, Any]]]) -> None:
        """`plans`: a marker found in a task's text -> the tool calls ({"tool": "Server:tool", "parameters"})
        planned in round 1 of that task."""
        super().__init__({})
        self.plans = plans
        self.kinds: list[str] = []  # the kind of each question, in arrival order

    def step_for(self, body: dict[str, Any]) -> tuple[tuple[str, str] | None, dict[str, Any] | None]:
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        kind, text = self.answer(prompt)
        self.kinds.append(kind)
        self.turns[(kind, "")] += 1
        return (kind, ""), {"text": text}

    def answer(self, prompt: str) -> tuple[str, str]:
        if '"should_continue"' in prompt:
            return "plan", json.dumps(self._plan(prompt))
        if '"task_fulfillment"' in prompt:
            digest = hashlib.sha256(prompt.encode()).digest()
            scores = {name: 3 + digest[i] % 6 for i, name in enumerate(SCORES)}
            reasons = {f"{name}_reasoning": f"scripted: {scores[name]}" for name in SCORES}
            return "judge", json.dumps({**reasons, **scores})
        if "SUMMARIZED CONTENT:" in prompt:
            content = prompt.split("CONTENT:", 1)[-1].strip().splitlines()
            return "summary", (content[0] if content else "")[:200] or "(empty)"
        task = self._task(prompt)
        return "synthesis", f"Final answer for: {task[:80]}"

    def _plan(self, prompt: str) -> dict[str, Any]:
        round_match = re.search(r"CURRENT ROUND: (\d+)", prompt)
        first = round_match is not None and round_match.group(1) == "1"
        task = self._task(prompt)
        planned = next((calls for marker, calls in self.plans.items() if marker in task), None)
        if first and planned:
            return {"reasoning": "scripted plan", "should_continue": True, "planned_tools": planned}
        return {"reasoning": "scripted stop", "should_continue": False, "planned_tools": []}

    @staticmethod
    def _task(prompt: str) -> str:
        found = re.search(r'TASK: "(.*?)"\n', prompt, re.S)
        return found.group(1) if found else prompt[:200]
