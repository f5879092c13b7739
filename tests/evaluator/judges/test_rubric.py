"""MCP-Bench rubric judge: shuffling, 5 runs, averaging over the runs that parse."""

import asyncio
import json
import random
import re

import pytest

from mcpgw.evaluator.judges.client import JudgeClient, JudgeConfig
from mcpgw.evaluator.judges.rubric import RUBRIC, SCORE_KEYS, combine, judge_rubric, shuffled_rubric
from mcpgw.evaluator.judges.store import MemoryStore

VALUES = {
    "fuzzy_task": "Help me plan a trip",
    "concrete_task": "Find 3 parks in CA and their weather",
    "dependency_analysis": "parks -> weather",
    "final_answer": "Yosemite, 20C",
    "rounds": 3,
    "trace": "1. parks__search({}) -> ok",
    "tools": "- parks__search",
}


def scores(value, **override):
    return json.dumps({**{k: value for k in SCORE_KEYS}, **{k: f"reason {k}" for k in ()}, **override})


def judge(fake, key_env, store=None, task_id="task-7"):
    client = JudgeClient(JudgeConfig(model="j", base_url=fake.url, api_key_env=key_env, backoff=0.0, timeout=5), store)

    async def go():
        try:
            return await judge_rubric(client, task_id=task_id, values=VALUES)
        finally:
            await client.aclose()

    return asyncio.run(asyncio.wait_for(go(), 30))


def test_five_runs_averaged_over_those_that_parse(fake_openai, judge_key):
    fake_openai.script = [
        {"content": "```json\n" + scores(8) + "\n```"},
        {"content": scores(6)},
        {"content": "I refuse to answer in JSON."},  # does not parse: skipped
        {"content": json.dumps({"task_fulfillment": 10, "grounding": "x"})},  # parses; only one usable field
        {"status": 500},  # retried, then answered
        {"content": scores(4)},
    ]
    result = judge(fake_openai, judge_key)
    assert result["runs"] == 5 and result["parsed_runs"] == 4 and len(fake_openai.requests) == 6
    assert result["scores"]["task_fulfillment"] == pytest.approx((8 + 6 + 10 + 4) / 4)
    assert result["scores"]["grounding"] == pytest.approx((8 + 6 + 4) / 3)  # per field: "x" is not a score
    assert result["axes"]["task_completion"] == pytest.approx((7.0 + 6.0) / 2 / 10)
    assert result["axes"]["tool_usage"] == pytest.approx(0.6)
    assert result["overall"] == pytest.approx((7 + 6 * 5) / 6 / 10)


def rubric_part(prompt):
    return prompt.split("## Rubric", 1)[1]


def test_each_run_sees_everything_in_its_own_order(fake_openai, judge_key):
    fake_openai.script = [{"content": scores(5)}]
    judge(fake_openai, judge_key)
    prompts = fake_openai.prompts()
    assert len(prompts) == 5
    for prompt in prompts:
        for value in (
            "Help me plan a trip",
            "Find 3 parks in CA",
            "parks -> weather",
            "Yosemite, 20C",
            "3 rounds",
            "parks__search({})",
        ):
            assert value in prompt
        part = rubric_part(prompt)
        assert all(f'"{key}"' in part for key in SCORE_KEYS)
        assert len(re.findall(r"^   - (1-3|4-6|7-8|9-10): ", part, re.M)) == 24
    assert len({rubric_part(p) for p in prompts}) == 5  # five different shuffles


def test_rescoring_is_deterministic_and_free(fake_openai, judge_key):
    fake_openai.script = [{"content": scores(7)}]
    store = MemoryStore()
    first = judge(fake_openai, judge_key, store)
    second = judge(fake_openai, judge_key, store)
    assert len(fake_openai.requests) == 5 and first == second
    fresh = judge(fake_openai, judge_key, MemoryStore())  # same task: same prompts, same keys
    assert fresh["keys"] == first["keys"]
    other = judge(fake_openai, judge_key, MemoryStore(), task_id="task-8")
    assert other["keys"] != first["keys"]


def test_nothing_parses(fake_openai, judge_key):
    fake_openai.script = [{"content": "no"}]
    result = judge(fake_openai, judge_key)
    assert result["parsed_runs"] == 0 and result["overall"] is None and result["axes"]["tool_usage"] is None


def test_axes_subdimensions_and_ranges_shuffle_independently():
    axis_orders, sub_orders, first_range = set(), {axis: set() for axis in RUBRIC}, set()
    for seed in range(300):
        text = shuffled_rubric(random.Random(seed))
        axes = re.findall(r"^### (.+)$", text, re.M)
        axis_orders.add(tuple(axes))
        for axis, block in zip(axes, re.split(r"^### .+$", text, flags=re.M)[1:]):
            sub_orders[axis].add(tuple(re.findall(r"^\d\. (.+?) \(answer key", block, re.M)))
        fulfillment = text.split("Task fulfillment", 1)[1]
        first_range.add(re.search(r"   - (\S+):", fulfillment).group(1))
    assert len(axis_orders) == 6  # every order of the three axes occurs
    assert all(len(orders) == 2 for orders in sub_orders.values())
    assert first_range == {"1-3", "4-6", "7-8", "9-10"}


def test_combine_rejects_out_of_range_scores():
    result = combine([{k: 11 for k in SCORE_KEYS}, {k: 5 for k in SCORE_KEYS}])
    assert result["scores"]["grounding"] == 5.0
