"""One answer per request: JSON-RPC ids in flight on a session never collide.

The SDK's HTTP transport files each request's answer stream under `str(id)`,
so two requests in flight on one session with ids `7` and `"7"` (distinct under
JSON-RPC), or the same id twice, share a stream: one caller gets the other's
result and the other waits forever. This layer sits in front of the transport
and keeps a table of the ids in flight per session:

- the same id (same type, same value) again while the first is in flight is a
  client error: answered at once with a JSON-RPC error, never forwarded;
- an id whose `str()` collides with one in flight but is a different id (`7`
  vs `"7"`) is forwarded under a private alias, and the alias is turned back
  into the client's id in the answer (and in a `notifications/cancelled` that
  names it), so both callers get their own answers.

It is the gateway's one table of ids in flight: a request the fast path answers files its cancel scope
in its entry (`InFlight.cancel`), so a `notifications/cancelled` naming it cancels it here.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from mcpgw.gateway.errors.http_errors import replay_body, send_error
from mcpgw.gateway.sessions.pipeline_verdicts import DECLINED, HotHead
from mcpgw.gateway.sessions.request_context import context_of, with_message

_ALIAS_PREFIX = "mcpgw-id-"


@dataclass(slots=True)
class InFlight:
    client_id: Any  # the id as the client sent it
    wire_id: Any  # the id the layers behind see (an alias when it collides)
    cancel: Any = None  # the fast path's cancel scope while it answers the request (gateway.endpoints.fast_path)


class InflightIds:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.sessions: dict[str, dict[str, InFlight]] = {}  # session -> {str(wire id): its request}
        self._serial = itertools.count(1)
        self.rejected = 0
        self.aliased = 0

    def hot_head(self, head: HotHead) -> bool:
        return True  # its verdict needs the message (`hot_body`)

    def hot_body(self, head: HotHead, body: bytes, message: Any) -> Any:
        """A request (a method and an id) whose id is free on its session (the hot lane files it, as here)."""
        if type(message) is not dict or "method" not in message or "id" not in message:
            return DECLINED  # a notification, answer or cancellation: mapped here
        if head.session_id is None or str(message["id"]) in self.sessions.get(head.session_id, ()):
            return DECLINED  # in flight: refused or aliased here
        return message

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        ctx = context_of(scope)
        message = ctx.body
        session = ctx.session_id
        if session is None or not isinstance(message, dict) or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if "method" not in message or "id" not in message:
            await self.app(*self._map_cancel(session, message, scope, receive), send)
            return
        client_id = message["id"]
        inflight = self.sessions.setdefault(session, {})
        held = inflight.get(str(client_id))
        # A per-server endpoint serves harnesses that reuse one id for a round of parallel calls (MCP-Bench's
        # `id: 2`): each POST gets its own answer, so the reused id is aliased like a colliding one.
        if held is not None and _same_id(held.client_id, client_id) and ctx.server is None:
            self.rejected += 1
            await send_error(
                send,
                200,
                -32600,
                f"Invalid Request: id {json.dumps(client_id)} is already in use by a "
                "request in flight on this session; use a new id for each request",
                request_id=client_id,
            )
            return
        wire_id = client_id
        if held is not None:  # `7` while `"7"` is in flight (or the reverse): a private alias keeps them apart
            self.aliased += 1
            wire_id = f"{_ALIAS_PREFIX}{next(self._serial)}"
            scope, receive = _rewritten_request(scope, receive, {**message, "id": wire_id})
            send = _restore_id(send, wire_id, client_id)
        entry = inflight[str(wire_id)] = InFlight(client_id, wire_id)
        context_of(scope).inflight = entry
        try:
            await self.app(scope, receive, send)
        finally:
            self.release(session, entry)

    def file(self, session: str, client_id: Any) -> InFlight | None:
        """File a request whose id is free on its session (the hot lane's way in); None when any id in flight
        has its `str()` (the same id, or a colliding one, which only the layer above can alias)."""
        inflight = self.sessions.setdefault(session, {})
        if str(client_id) in inflight:
            return None
        entry = inflight[str(client_id)] = InFlight(client_id, client_id)
        return entry

    def release(self, session: str, entry: InFlight) -> None:
        inflight = self.sessions.get(session)
        if inflight is not None:
            inflight.pop(str(entry.wire_id), None)
            if not inflight:
                self.sessions.pop(session, None)

    def _map_cancel(self, session: str, message: dict[str, Any], scope: Any, receive: Any) -> tuple[Any, Any]:
        """A cancellation naming an aliased request goes to the alias."""
        if message.get("method") != "notifications/cancelled" or not isinstance(message.get("params"), dict):
            return scope, receive
        target = message["params"].get("requestId")
        entries = list(self.sessions.get(session, {}).values())
        # The client's own id first; else as the SDK matches a cancellation to its answer streams, by `str(id)`.
        entry = next((e for e in entries if _same_id(e.client_id, target)), None) or next(
            (
                e
                for e in entries
                if e.wire_id == e.client_id
                and target is not None
                and not isinstance(target, bool)
                and str(target) == str(e.wire_id)
            ),
            None,
        )
        if entry is None:
            return scope, receive
        if entry.cancel is not None:  # answered by the fast path, which the SDK never saw: cancelled here
            entry.cancel.cancel()
        if entry.wire_id != entry.client_id:
            return _rewritten_request(
                scope, receive, {**message, "params": {**message["params"], "requestId": entry.wire_id}}
            )
        return scope, receive


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _rewritten_request(scope: Any, receive: Any, message: dict[str, Any]) -> tuple[Any, Any]:
    """The request as if the client had sent `message`: parsed for the layers inside (the fast path
    reads it) and on the wire for the SDK."""
    return with_message(scope, message), replay_body(json.dumps(message).encode(), receive)


def _restore_id(send: Any, wire_id: str, client_id: Any) -> Any:
    """Put the client's id back into the answer: a JSON body (Content-Length fixed) or SSE events."""
    alias = json.dumps(wire_id).encode()
    original = json.dumps(client_id).encode()
    held_start: dict[str, Any] = {}

    async def restoring(message: Any) -> None:
        if message["type"] == "http.response.start":
            if any(k.lower() == b"content-length" for k, _ in message.get("headers", [])):
                held_start["start"] = message  # sent once the body's new length is known
                held_start["chunks"] = []
                return
            await send(message)
            return
        if message["type"] == "http.response.body":
            body = message.get("body", b"").replace(alias, original)
            if "start" in held_start:
                held_start["chunks"].append(body)
                if message.get("more_body", False):
                    return
                whole = b"".join(held_start.pop("chunks"))
                start = held_start.pop("start")
                headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(whole)).encode())]})
                await send({"type": "http.response.body", "body": whole, "more_body": False})
                return
            await send({**message, "body": body})
            return
        await send(message)

    return restoring
