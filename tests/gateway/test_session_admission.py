"""gateway.sessions.sessions.SessionAdmission with a stand-in app: what it counts while a session is being opened."""

import json
import uuid

import anyio

from mcpgw.gateway.sessions.request_context import context_of
from mcpgw.gateway.sessions.sessions import SessionAdmission, SessionLimits

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def test_a_session_whose_answer_is_sent_is_not_counted_twice_while_its_request_winds_down():
    """The SDK's task for an initialize still runs after its answer has gone out (the SSE stream closing). A busy
    gateway let the client read the answer and send its next initialize before that: the first session was then
    counted as open and as opening, and at a limit of 2 closed to make room (the test that opens two sessions in
    a row lost its first one, 'Session not found', under load)."""
    winding_down = anyio.Event()
    closed: list[str] = []
    opened: list[str] = []

    async def sdk(scope, receive, send):
        if scope["method"] == "DELETE":
            closed.append(dict(scope["headers"])[b"mcp-session-id"].decode())
            return
        session_id = uuid.uuid4().hex
        opened.append(session_id)
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"mcp-session-id", session_id.encode())]}
        )
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})
        if len(opened) == 1:
            await winding_down.wait()

    admission = SessionAdmission(sdk, SessionLimits(per_client=2))

    def initialize():
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "query_string": b"",
            "client": ("127.0.0.1", 5),
            "headers": [(b"content-type", b"application/json")],
        }
        context_of(scope).message = INIT

        async def receive():
            return {"type": "http.request", "body": json.dumps(INIT).encode(), "more_body": False}

        async def send(message):
            pass

        return admission(scope, receive, send)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: initialize())
            await anyio.sleep(0.05)  # the first answer is out; its request has not returned
            await initialize()  # the client's second session: room for it without closing the first
            winding_down.set()

    anyio.run(main)
    assert closed == [] and admission.evicted == 0
    assert sorted(admission.sessions) == sorted(opened) and admission.opening == {}
