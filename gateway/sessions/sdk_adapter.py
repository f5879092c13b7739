"""Every use of the MCP SDK's private surface, in one place (mcp 2.3).

The gateway needs a few things the SDK does not offer publicly: the connection behind a request's
session, the transport's content-type check and its table of answer streams, the result shaping of
`ServerRunner`, a hook before the transport handles a POST, and a session manager that builds our
transport. Each is reached here and nowhere else, so an SDK upgrade that renames one breaks this module
alone; `PRIVATE` lists them and `missing()` says which the installed SDK lacks
(tests/gateway/test_sdk_adapter.py fails on any).
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Callable
from typing import Any
from uuid import uuid4

from mcp.server.runner import ServerRunner
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

logger = logging.getLogger(__name__)

# (owner, private name, the parameters it must take; None: an attribute set by __init__)
PRIVATE: list[tuple[type, str, tuple[str, ...] | None]] = [
    (ServerSession, "_connection", None),
    (ServerRunner, "_serialize", ("self", "method", "version", "result")),
    (StreamableHTTPServerTransport, "_check_content_type", ("self", "request")),
    (StreamableHTTPServerTransport, "_handle_post_request", ("self", "scope", "request", "receive", "send")),
    (StreamableHTTPServerTransport, "_request_streams", None),
    (StreamableHTTPServerTransport, "_requests_in_flight", None),
    (StreamableHTTPSessionManager, "_admit_session", ("self", "requestor")),
    (StreamableHTTPSessionManager, "_server_instances", None),
    (StreamableHTTPSessionManager, "_session_owners", None),
]


def missing() -> list[str]:
    """The private names above the installed SDK no longer has (or has with other parameters)."""
    samples = {
        ServerSession: ServerSession(None, _StubConnection()),  # type: ignore[arg-type]
        StreamableHTTPServerTransport: StreamableHTTPServerTransport(mcp_session_id=None),
        StreamableHTTPSessionManager: StreamableHTTPSessionManager(app=None),  # type: ignore[arg-type]
    }
    problems = []
    for owner, name, parameters in PRIVATE:
        if parameters is None:
            if name not in vars(samples[owner]) and not hasattr(samples[owner], name):
                problems.append(f"{owner.__name__}.{name}: no such attribute")
            continue
        member = getattr(owner, name, None)
        if not callable(member):
            problems.append(f"{owner.__name__}.{name}: no such method")
        elif tuple(inspect.signature(member).parameters) != parameters:
            problems.append(
                f"{owner.__name__}.{name}: takes {tuple(inspect.signature(member).parameters)}, not {parameters}"
            )
    return problems


class _StubConnection:
    protocol_version = "2025-11-25"
    session_id = None


def connection_of(session: Any) -> Any:
    """The `Connection` behind a handler's session (no public accessor on `ServerSession` in mcp 2.3;
    the fast path's session names it publicly)."""
    return getattr(session, "_connection", None) or getattr(session, "connection", None)


def serialize_result(server: Any, connection: Any, method: str, version: str, result: Any) -> dict[str, Any]:
    """The SDK's own shaping of a handler's result (cache hints, sieve, 2026 stamps) for `method`.

    The commonest result, a handshake-era tool result of text blocks, is shaped here as the SDK shapes it
    (its pydantic round trip costs 30 us a call): tests/gateway/test_sdk_adapter.py holds the two equal."""
    if plain_shaping(server, method, version):
        shaped = plain_text_result(result)
        if shaped is not None:
            return shaped
    return ServerRunner(server, connection, None)._serialize(method, version, result)


def plain_shaping(server: Any, method: str, version: str) -> bool:
    """Whether `serialize_result` shapes a result of `method` as plain text blocks when it is one (nothing but the
    result then decides its shape)."""
    return method == "tools/call" and version in HANDSHAKE_PROTOCOL_VERSIONS and method not in server.cache_hints


def plain_text_result(result: Any) -> dict[str, Any] | None:
    """`{"content": [text blocks], "isError"?: bool}` as the SDK dumps it (each block's keys in its model's
    order, `text` first); None for any other result."""
    if not isinstance(result, dict) or not result.keys() <= _PLAIN_KEYS:
        return None
    content = result.get("content")
    if not isinstance(content, list):
        return None
    blocks = []
    for block in content:
        if (
            not isinstance(block, dict)
            or block.keys() != _TEXT_KEYS
            or block["type"] != "text"
            or type(block["text"]) is not str
        ):
            return None
        blocks.append({"text": block["text"], "type": "text"})
    shaped: dict[str, Any] = {"content": blocks}
    if "isError" in result:
        if type(result["isError"]) is not bool:
            return None
        shaped["isError"] = result["isError"]
    return shaped


_PLAIN_KEYS = frozenset({"content", "isError"})
_TEXT_KEYS = {"type", "text"}


def content_type_ok(transport: StreamableHTTPServerTransport, request: Any) -> bool:
    return transport._check_content_type(request)


def has_answer_stream(transport: StreamableHTTPServerTransport, request_id: str) -> bool:
    """An SDK-path request with this id is in flight on the transport."""
    return request_id in transport._request_streams


def session_transport(manager: StreamableHTTPSessionManager, session_id: str) -> Any:
    """The transport the session manager would hand a request of this session to, as it is (no owner
    recorded, not terminated, its idle period not run out); None when the manager would do anything else."""
    transport = manager._server_instances.get(session_id)
    if transport is None or manager._session_owners.get(session_id) is not None or transport.is_terminated:
        return None
    idle = transport.idle_scope
    if idle is None or idle.cancel_called or manager.session_idle_timeout is None:
        return None
    return transport


def request_began(transport: Any, *, suspend: bool = True) -> None:
    """What the transport's `handle_request` does as a request begins: the session's idle countdown is suspended
    while any request is served (`request_ended` restarts it). Two calls, not a context manager: on the hot lane
    the generator a context manager costs was measured at half of this bookkeeping. `suspend=False`: a request
    answered in the event loop's turn that began it (gateway.runtime.eager), which no countdown can interrupt; if it waits
    after all, `request_waits` suspends the countdown then."""
    transport._requests_in_flight += 1
    if suspend:
        request_waits(transport)


def request_waits(transport: Any) -> None:
    """A request of the session waits (on its upstream, say): its idle countdown is suspended until it ends."""
    idle = transport.idle_scope
    if idle.deadline != math.inf:  # suspended already while another request of the session is served
        idle.deadline = math.inf


def request_ended(transport: Any, idle_timeout: float) -> None:
    """The countdown restarts when the session's last request in flight ends (`idle_timeout`: the manager's
    `session_idle_timeout`, which it gave the transport). A running countdown is moved on only once it has run
    for more than a hundredth of its length (a second at most): moving it costs a timer (6.9 us a request,
    measured), and a session under use would move it on every request. So a session is closed after between
    99% of its idle time (one second less, at most) and all of it."""
    transport._requests_in_flight -= 1
    if not transport._requests_in_flight:
        idle = transport.idle_scope
        # anyio's clock is the loop's: time.monotonic() under asyncio, the same clock read once per loop turn under
        # uvloop. Read here without asking for the running loop (in CPython 3.11 a getpid() system call each time).
        restart = time.monotonic() + idle_timeout
        if idle.deadline < restart - min(1.0, idle_timeout / 100) or idle.deadline == math.inf:
            idle.deadline = restart


class HookedTransport(StreamableHTTPServerTransport):
    """The SDK's session transport with a hook before it handles a POST (`before_post`: True = answered)."""

    async def before_post(self, scope: Any, request: Any, send: Any) -> bool:
        return False

    async def _handle_post_request(self, scope: Any, request: Any, receive: Any, send: Any) -> None:
        if not await self.before_post(scope, request, send):
            await super()._handle_post_request(scope, request, receive, send)


class GatewaySessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, building its sessions' transports with `make_transport` (no global patch).

    `make_transport(**kwargs)` takes what the SDK passes its own transport, and may choose the session id."""

    def __init__(self, *args: Any, make_transport: Callable[..., StreamableHTTPServerTransport], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.make_transport = make_transport

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        # As the SDK's own (mcp 2.3), with our transport class.
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        transport = self.make_transport(
            mcp_session_id=uuid4().hex,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )
        session_id = transport.mcp_session_id
        assert session_id is not None
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        return transport
