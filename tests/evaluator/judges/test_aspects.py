"""MCPEval trajectory and completion judgements through the real client."""

import asyncio
import json

import pytest

from mcpgw.evaluator.judges.aspects import COMPLETION, TRAJECTORY, judge_trajectory_and_completion
from mcpgw.evaluator.judges.client import JudgeClient, JudgeConfig


def answer(body):
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "- planning:" in prompt:
        return {"content": json.dumps({**{k: 0.5 for k in TRAJECTORY}, "planning": 1.0, "comments": "ok"})}
    return {
        "content": json.dumps({"requirement_coverage": 1, "accuracy": 0.5, "completeness": "n/a", "usefulness": 3})
    }  # two unusable values: left out of the mean


def test_two_judgements_scored_per_aspect(fake_openai, judge_key):
    fake_openai.script = answer
    client = JudgeClient(JudgeConfig(model="j", base_url=fake_openai.url, api_key_env=judge_key, backoff=0, timeout=5))
    values = {
        "task": "Book a table",
        "trajectory": "1. book(...)",
        "response": "Booked.",
        "reference_trajectory": "1. book(time=19)",
    }

    async def go():
        try:
            return await judge_trajectory_and_completion(client, task_id="t1", values=values)
        finally:
            await client.aclose()

    result = asyncio.run(asyncio.wait_for(go(), 30))
    trajectory, completion = result["trajectory"], result["completion"]
    assert trajectory["score"] == pytest.approx((1.0 + 0.5 * 6) / 7) and trajectory["comments"] == "ok"
    assert completion["score"] == pytest.approx(0.75)
    assert completion["aspects"]["completeness"] is None and completion["aspects"]["usefulness"] is None
    prompts = fake_openai.prompts()
    assert len(prompts) == 2 and all("Book a table" in p and "book(time=19)" in p for p in prompts)
    assert "(not given)" in prompts[0]  # no reference response was given
    assert all(f"- {k}:" in prompts[1] for k in COMPLETION)
