"""The judge client against a real loopback server speaking the chat-completions API."""

import asyncio

import pytest

from mcpgw.evaluator.errors import JudgeConfigError, JudgeMiss, JudgeUnavailable
from mcpgw.evaluator.judges.client import JudgeClient, JudgeConfig
from mcpgw.evaluator.judges.store import LmdbStore, MemoryStore

MESSAGES = [{"role": "user", "content": "Is 2+2 four?"}]


def client_for(url, key_env, store=None, **config):
    settings = {"timeout": 5.0, "backoff": 0.0, **config}
    return JudgeClient(JudgeConfig(model="judge-1", base_url=url, api_key_env=key_env, **settings), store)


def run(coro, limit=30):
    return asyncio.run(asyncio.wait_for(coro, limit))


async def complete_and_close(client, messages=MESSAGES, **kwargs):
    try:
        return await client.complete(messages, what="a test exchange", **kwargs)
    finally:
        await client.aclose()


def test_answer_is_returned_and_request_is_well_formed(fake_openai, judge_key):
    fake_openai.script = [{"content": "yes"}]
    exchange = run(complete_and_close(client_for(fake_openai.url, judge_key)))
    assert exchange.text == "yes" and not exchange.recorded
    (request,) = fake_openai.requests
    assert request["model"] == "judge-1" and request["messages"] == MESSAGES and request["temperature"] == 0.0


def test_transient_failures_are_retried(fake_openai, judge_key):
    fake_openai.script = [{"status": 500}, {"status": 429}, {"status": 503}, {"content": "finally"}]
    client = client_for(fake_openai.url, judge_key)
    assert run(complete_and_close(client)).text == "finally"
    assert len(fake_openai.requests) == 4 and client.attempts == 4


def test_gives_up_after_three_retries(fake_openai, judge_key):
    fake_openai.script = [{"status": 502, "message": "bad gateway upstream"}]
    with pytest.raises(JudgeUnavailable, match="kept failing: HTTP 502 after 4 attempts"):
        run(complete_and_close(client_for(fake_openai.url, judge_key)))
    assert len(fake_openai.requests) == 4  # the first try and 3 retries


def test_client_errors_are_not_retried(fake_openai, judge_key):
    fake_openai.script = [{"status": 401, "message": "invalid api key"}]
    with pytest.raises(JudgeUnavailable, match="refused the request: HTTP 401"):
        run(complete_and_close(client_for(fake_openai.url, judge_key)))
    assert len(fake_openai.requests) == 1


def test_unreachable_endpoint_is_a_clear_error(closed_port, judge_key):
    url = f"http://127.0.0.1:{closed_port}/v1"
    with pytest.raises(JudgeUnavailable) as info:
        run(complete_and_close(client_for(url, judge_key, retries=1)))
    assert "cannot reach judge endpoint" in info.value.message and url in info.value.message
    assert "2 attempts" in info.value.message


def test_slow_endpoint_times_out(fake_openai, judge_key):
    fake_openai.script = [{"delay": 1.0, "content": "late"}]
    with pytest.raises(JudgeUnavailable, match="did not answer within 0.3s"):
        run(complete_and_close(client_for(fake_openai.url, judge_key, timeout=0.3, retries=1)))
    assert len(fake_openai.requests) == 2


def test_malformed_bodies_become_empty_answers(fake_openai, judge_key):
    fake_openai.script = [{"no_choices": True}]
    assert run(complete_and_close(client_for(fake_openai.url, judge_key))).text == ""
    fake_openai.script = [{"raw": "<html>oops</html>"}]
    assert run(complete_and_close(client_for(fake_openai.url, judge_key), salt={"x": 1})).text == ""


def test_exchanges_are_recorded_and_replayed(fake_openai, judge_key, tmp_path):
    fake_openai.script = [{"content": "first answer"}, {"content": "a different answer"}]
    store = LmdbStore(tmp_path / "judge")
    first = run(complete_and_close(client_for(fake_openai.url, judge_key, store)))
    again = run(complete_and_close(client_for(fake_openai.url, judge_key, store)))
    assert again.text == "first answer" and again.recorded and again.key == first.key
    assert len(fake_openai.requests) == 1  # the second time was free
    salted = run(complete_and_close(client_for(fake_openai.url, judge_key, store), salt={"run": 1}))
    assert salted.text == "a different answer" and salted.key != first.key
    store.close()
    # Offline, from a fresh read-only open of the same directory, with no key and no server needed.
    offline_store = LmdbStore(tmp_path / "judge", readonly=True)
    offline = client_for("http://127.0.0.1:9/v1", "NO_SUCH_KEY_VAR", offline_store, offline=True)
    assert run(complete_and_close(offline)).text == "first answer"
    with pytest.raises(JudgeMiss, match="offline: no recorded judge answer for a test exchange"):
        run(complete_and_close(offline, messages=[{"role": "user", "content": "never asked"}]))
    offline_store.close()


def test_params_change_the_key(fake_openai, judge_key):
    fake_openai.script = [{"content": "a"}]
    store = MemoryStore()
    hot = run(complete_and_close(client_for(fake_openai.url, judge_key, store, temperature=0.7)))
    cold = run(complete_and_close(client_for(fake_openai.url, judge_key, store, temperature=0.0)))
    assert hot.key != cold.key and len(fake_openai.requests) == 2
    assert fake_openai.requests[0]["temperature"] == 0.7


def test_missing_key_or_model(fake_openai, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(JudgeConfigError, match="NO_SUCH_KEY_VAR is not set"):
        run(complete_and_close(client_for(fake_openai.url, "NO_SUCH_KEY_VAR")))
    assert fake_openai.requests == []
    with pytest.raises(JudgeConfigError, match="no judge model"):
        JudgeClient(JudgeConfig(model=""))
