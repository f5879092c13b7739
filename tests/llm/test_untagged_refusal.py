"""Issue 41 item 4: an untagged model client is never given one tagged evaluation's answers while it may be
another's (llm.untagged_refusal), and a tagged one replays its own."""

from __future__ import annotations

import json

import anyio
import httpx
from starlette.applications import Starlette

from mcpgw.gateway.endpoints.http_guard import GuardPolicy, HttpGuard, default_allowed_hosts
from mcpgw.gateway.endpoints.per_server import ServerPaths
from mcpgw.llm.passthrough import CHAT, ModelPassthrough
from mcpgw.llm.untagged_refusal import tagged_runs
from tests.llm.test_lanes import body
from tests.llm.test_lanes import entry as bare_entry


def entry(key: str, lane: str, text: str) -> dict:
    """A recorded chat exchange answered `text`."""
    answer = {"choices": [{"message": {"role": "assistant", "content": text}}]}
    return {**bare_entry(key, lane, ""), "result": {"status": 200, "body": answer, "content_type": "application/json"}}


# Two evaluations of one task: the same first prompt, each model answered it its own way.
TWO_EVALUATIONS = [
    entry("plan the task", "default/client-aa", "A's plan"),
    entry("plan the task", "default/client-bb", "B's plan"),
]
TAGGED_EVALUATIONS = [entry("plan the task", "A", "A's plan"), entry("plan the task", "B", "B's plan")]


def ask(passthrough: ModelPassthrough, path: str = CHAT) -> tuple[int, str]:
    async def go() -> tuple[int, str]:
        guard = GuardPolicy(allowed_hosts=default_allowed_hosts("127.0.0.1"))
        app = ServerPaths(HttpGuard(Starlette(routes=passthrough.routes()), guard), endpoints=("/mcp",))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            answer = await client.post(path, content=json.dumps(body("plan the task")))
            return answer.status_code, answer.text

    return anyio.run(go)


def test_the_runs_a_recording_was_tagged_with():
    tools = [
        {"lane": "A"},
        {"lane": "B"},
        {"lane": "default/client-x"},
        {"lane": "default/session-ab"},
        {"lane": "r/9"},
    ]
    assert tagged_runs(tools) == {"A", "B", "r/9"}


def test_an_untagged_client_of_a_recording_of_two_tagged_evaluations_is_refused_and_told_how_to_tag():
    refused = ModelPassthrough("replay", None, recorded_entries=TWO_EVALUATIONS, recorded_runs={"A", "B"})
    status, text = ask(refused)
    assert status == 409 and "cannot be told" in text and "/runs/<id>" in text, text
    assert refused.misses == 1


def test_one_tagged_run_or_alike_answers_keep_binding_as_before():
    one_run = ModelPassthrough("replay", None, recorded_entries=TWO_EVALUATIONS, recorded_runs={"A"})
    status, text = ask(one_run)
    assert status == 200 and "A's plan" in text  # the first recorded conversation, as before
    alike = [entry("plan the task", "default/client-aa", "same"), entry("plan the task", "default/client-bb", "same")]
    status, text = ask(ModelPassthrough("replay", None, recorded_entries=alike, recorded_runs={"A", "B"}))
    assert status == 200 and "same" in text


def test_a_client_tagged_in_its_base_url_replays_its_own_evaluation():
    tagged = ModelPassthrough("replay", None, recorded_entries=TAGGED_EVALUATIONS, recorded_runs={"A", "B"})
    status, text = ask(tagged, "/runs/B" + CHAT)
    assert status == 200 and "B's plan" in text, text
    status, text = ask(tagged)  # the same client untagged: refused, not given A's plan
    assert status == 409 and "A's plan" not in text
