"""The in-flight id table on its own, in front of a test double of the SDK transport (an ASGI app
that records what reaches it and answers with the id it was given)."""

from __future__ import annotations

import json

import anyio

from mcpgw.gateway.sessions.request_context import context_of
from mcpgw.gateway.sessions.request_ids import InflightIds


class Transport:
    """Holds each request until released; answers `{"id": <id it saw>}` with a Content-Length."""

    def __init__(self) -> None:
        self.seen: list[dict] = []
        self.release = anyio.Event()

    async def __call__(self, scope, receive, send) -> None:
        message = json.loads((await receive())["body"])
        self.seen.append(message)
        if "id" not in message:
            return
        await self.release.wait()
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})


async def post(app, message: dict) -> tuple[int, dict]:
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [(b"mcp-session-id", b"s1")]}
    context_of(scope).message = message  # as the guard leaves it
    sent: list[dict] = []
    delivered = False

    async def receive():
        nonlocal delivered
        delivered = True
        return {"type": "http.request", "body": json.dumps(message).encode(), "more_body": False}

    async def send(event):
        sent.append(event)

    await app(scope, receive, send)
    if not sent:
        return 202, {}
    length = dict(sent[0]["headers"]).get(b"content-length")
    body = b"".join(e.get("body", b"") for e in sent[1:])
    assert length is None or int(length) == len(body)
    return sent[0]["status"], json.loads(body)


def test_colliding_ids_are_aliased_cancels_follow_the_alias_and_duplicates_are_refused():
    transport = Transport()
    ids = InflightIds(transport)
    answers: dict[str, tuple[int, dict]] = {}

    async def scenario() -> None:
        async def call(key: str, message: dict) -> None:
            answers[key] = await post(ids, message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "int", {"jsonrpc": "2.0", "id": 7, "method": "tools/call"})
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(call, "str", {"jsonrpc": "2.0", "id": "7", "method": "tools/call"})
            await anyio.wait_all_tasks_blocked()
            answers["dup"] = await post(ids, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
            await post(ids, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "7"}})
            await post(ids, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
            transport.release.set()

    anyio.run(scenario)
    alias = transport.seen[1]["id"]
    assert transport.seen[0]["id"] == 7 and isinstance(alias, str) and alias != "7"
    assert answers["int"] == (200, {"jsonrpc": "2.0", "id": 7, "result": {}})
    assert answers["str"] == (200, {"jsonrpc": "2.0", "id": "7", "result": {}})  # the client's id, length fixed
    assert answers["dup"][1]["error"]["code"] == -32600 and len(transport.seen) == 4  # never forwarded
    assert transport.seen[2]["params"]["requestId"] == alias  # "7" cancels the aliased request
    assert transport.seen[3]["params"]["requestId"] == 7  # 7 cancels the first one
    assert ids.sessions == {}  # nothing left in flight
