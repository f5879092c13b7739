"""MCP-Eval pass/fail through the real openai client and a loopback server."""

import asyncio

from mcpgw.evaluator.judges.client import JudgeClient, JudgeConfig
from mcpgw.evaluator.judges.outcome import judge_outcome
from mcpgw.evaluator.judges.prompting import load_template


def judge(fake, key_env, **kwargs):
    client = JudgeClient(JudgeConfig(model="j", base_url=fake.url, api_key_env=key_env, backoff=0.0, timeout=5))

    async def go():
        try:
            return await judge_outcome(
                client,
                task_id="q1",
                query="Price of BTC now?",
                reference_answer="$61,000",
                answer=kwargs.pop("answer", "BTC trades at $60,950 (CoinGecko)."),
                **kwargs,
            )
        finally:
            await client.aclose()

    return asyncio.run(asyncio.wait_for(go(), 30))


def test_pass_and_what_the_judge_sees(fake_openai, judge_key):
    fake_openai.script = [{"content": '{"reasoning": "specific live price", "verdict": "pass"}'}]
    result = judge(fake_openai, judge_key)
    assert result["passed"] is True and result["reason"] == "specific live price" and len(result["key"]) == 64
    prompt = fake_openai.prompts()[0]
    assert "Price of BTC now?" in prompt and "$61,000" in prompt and "$60,950" in prompt
    assert fake_openai.requests[0]["messages"][0]["role"] == "system"


def test_fail_and_unparseable(fake_openai, judge_key):
    fake_openai.script = [{"content": "Verdict: FAIL - only general knowledge."}]
    assert judge(fake_openai, judge_key)["passed"] is False
    fake_openai.script = [{"content": "Hmm, hard to say."}]
    result = judge(fake_openai, judge_key, answer="something else")
    assert result["passed"] is None and "unparseable" in result["reason"]


def test_empty_answer_is_shown_as_such(fake_openai, judge_key):
    fake_openai.script = [{"content": '{"verdict": "fail"}'}]
    assert judge(fake_openai, judge_key, answer="  ")["passed"] is False
    assert "(empty answer)" in fake_openai.prompts()[0]


def test_user_prompt_file_is_sent_verbatim(fake_openai, judge_key, tmp_path):
    path = tmp_path / "original.txt"
    path.write_text(
        'ORIGINAL PROMPT\nQuestion: {query}\nGold: {reference_answer}\nModel: {answer}\nAnswer with {"verdict": ...}'
    )
    fake_openai.script = [{"content": "PASS"}]
    template = load_template(path, {"query", "reference_answer", "answer"})
    assert judge(fake_openai, judge_key, template=template)["passed"] is True
    sent = fake_openai.requests[0]["messages"]
    assert len(sent) == 1 and sent[0]["content"] == (
        "ORIGINAL PROMPT\nQuestion: Price of BTC now?\nGold: $61,000\nModel: BTC trades at $60,950 (CoinGecko).\n"
        'Answer with {"verdict": ...}'
    )
