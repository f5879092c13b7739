"""A model miss on a long prompt shows where the prompts part, not their common opening."""

from __future__ import annotations

from mcpgw.cassette.misses import describe_model_miss

PATH = "/v1/chat/completions"


def entry(content: str) -> dict:
    return {
        "method": PATH,
        "lane": "r1",
        "params": {
            "model": "m",
            "messages": [{"role": "system", "content": "you are a planner"}, {"role": "user", "content": content}],
        },
    }


def test_a_long_prompt_that_differs_deep_inside_shows_the_offset_and_both_sides():
    recorded = "Available tools: " + "".join(f"tool_{i}: does thing {i}. " for i in range(3000))
    asked = recorded[:41234] + "CHANGED" + recorded[41241:]
    text = describe_model_miss(PATH, entry(asked)["params"], "r1", [entry(recorded)])
    assert "message 2 differs" in text and "first difference at character 41234" in text, text
    assert f"of {len(recorded)} recorded, {len(asked)} asked" in text
    assert "CHANGED" in text and recorded[41234:41241] in text  # both sides of the difference
    assert recorded[:40] not in text  # not the common opening


def test_a_prompt_that_only_grows_shows_where_the_shorter_one_ends():
    text = describe_model_miss(PATH, entry("plan the trip and book it")["params"], "r1", [entry("plan the trip")])
    assert "first difference at character 13" in text and "asked 'plan the trip and book it'" in text, text
