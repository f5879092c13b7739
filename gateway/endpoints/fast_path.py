"""The fast path: hot requests answered in JSON without the SDK's per-request machinery.

In the SDK, a JSON-answered POST validates the message into a model, sends it
through the session's memory streams to the session task, builds a request
context and a typed params model, runs the middleware and handler, sieves the
result, re-validates it as a response model, routes it back through another
stream and dumps it to JSON: most of a call's CPU in the gateway, measured.

For `tools/call`, `tools/list` and `ping` on an initialized handshake-era
session, answered as plain JSON (the adaptive decision, or `--responses json`),
`FastPath` does the same work directly in the POST's own task: the SDK's
request surface validation, the very handlers the SDK would call (through the
server middleware, so own-work timing and the session directory see them), the
SDK's own result shaping (`sdk_adapter.serialize_result`: cache hints, sieve,
2026 stamps), and the JSON-RPC envelope. Everything else - initialize, SSE
answers, GET streams, notifications, server-to-client requests, 2026-07-28
requests, malformed or unusual messages - goes the SDK's way, unchanged: when
in doubt the fast path declines before anything has run, never after.

It sits inside the SDK's transport (gateway.endpoints.transport, through the POST hook of
gateway.sessions.sdk_adapter), so the session manager's lookup and owner check, the
transport's idle-timeout bookkeeping, and every layer of the pipeline still apply.
The request's id is in the one table of ids in flight (gateway.sessions.request_ids): the
fast path files its cancel scope there, so a `notifications/cancelled` cancels it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import mcp_types as types
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, REQUEST_CANCELLED, check_accept_headers
from mcp.shared.exceptions import MCPError
from mcp_types import methods as _methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcpgw.gateway.encoding import result_memo
from mcpgw.gateway.encoding.json_text import compact
from mcpgw.gateway.sessions import sdk_adapter
from mcpgw.gateway.sessions.request_context import RequestContext
from mcpgw.gateway.sessions.request_params import INVALID_PARAMS, plainly_valid
from mcpgw.gateway.sessions.sessions import SessionTable

if TYPE_CHECKING:
    from mcpgw.gateway.routing.router import Caller

logger = logging.getLogger(__name__)

HOT_METHODS = frozenset({"tools/call", "tools/list", "ping"})
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_RELAY_CAPABILITIES = ("sampling", "elicitation", "roots")

Handler = Callable[[Any, Any], Awaitable[Any]]
# A method's handler inside its middleware: the result, or a replayed result's JSON (`_stable_text`).
Chain = Callable[["FastContext"], Awaitable[dict[str, Any] | bytes]]


class FastPath:
    """What the fast path needs of the front: the SDK server, the handlers, the middleware chain, the sessions."""

    def __init__(self, server: Any, handlers: dict[str, Handler], sessions: SessionTable) -> None:
        self.server = server
        self.handlers = handlers
        self.sessions = sessions
        self.served = 0  # requests answered here (tests and /status read it)
        self.declined = 0
        self._chains: dict[str, tuple[Any, Chain]] = {}  # method -> (the middleware list it was made of, its chain)
        self._heads: dict[tuple[str, str], bool] = {}  # (Accept, Content-Type) -> the SDK's verdict

    async def try_answer(self, transport: Any, ctx: RequestContext, request: Any, send: Any) -> bool:
        """Answer the request if it qualifies; False (nothing done, nothing sent) otherwise."""
        message = ctx.body  # parsed once, by the guard
        if not isinstance(message, dict) or message.get("method") not in HOT_METHODS:
            return False
        call = self.prepare(transport, ctx.session_id, message, request)
        if call is None or ctx.inflight is None:
            self.declined += 1
            return False
        await _send_json(send, await self.answer(call, ctx.inflight), call.session_id)
        return True

    def prepare(
        self,
        transport: Any,
        named: str | None,
        message: dict[str, Any],
        request: Any,
        heads: Any = None,
        kept: HeadDecisions | None = None,
    ) -> HotCall | None:
        """The request as the fast path would answer it, or None when it does not qualify (nothing has run).
        `named`: the session id the request names (its header). Also what the hot lane (gateway.endpoints.hot_lane) asks
        before it answers a request at the HTTP protocol;
        `heads`: what the header checks read instead of `request` (Starlette's `headers.get`, and `ok`: their verdict,
        kept with it once made);
        `kept`: what the handlers decide from the request's head, kept for every request repeating it."""
        session_id = transport.mcp_session_id
        if not session_id or named != session_id:
            return None
        entry = self.sessions.get(session_id)
        if entry is None or entry.connection is None:  # (gateway.sessions.sessions.connection, inlined)
            return None
        session = entry.connection()
        if session is None:
            return None
        plain = entry.plain
        if plain is None:  # decided once per session: what initialize settled does not change
            if session.client_params is None:
                return None  # not initialized yet: the SDK answers as it does
            plain = entry.plain = (
                session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS and not _accepts_server_requests(session)
            )
        if not plain:
            return None
        version = session.protocol_version
        if not _qualifies(message):
            return None
        if heads is None:
            heads_ok = self._heads_ok(transport, request)
        else:  # the hot lane's kept head: its headers, but for the length, are the same on every request
            heads_ok = heads.ok
            if heads_ok is None:
                heads_ok = heads.ok = self._heads_ok(transport, heads)
        if not heads_ok:
            return None
        request_id = message["id"]
        if sdk_adapter.has_answer_stream(transport, str(request_id)):
            return None  # an id the SDK is answering on this session: its (stricter) path decides
        method, params = message["method"], message.get("params")
        if not plainly_valid(method, params):
            try:
                _methods.validate_client_request(method, version, params)
            except (ValidationError, KeyError, ValueError):
                return None  # malformed: the SDK answers with its usual error
        return HotCall(method, params, request_id, session, version, request, session_id, kept)

    def _heads_ok(self, transport: Any, heads: Any) -> bool:
        """The SDK's verdict on the request's Accept and Content-Type (JSON accepted, JSON sent), kept per pair of
        values: a client sends the same two on every request."""
        key = (heads.headers.get("accept", ""), heads.headers.get("content-type", ""))
        verdict = self._heads.get(key)
        if verdict is None:
            verdict = check_accept_headers(heads)[0] and sdk_adapter.content_type_ok(transport, heads)
            if len(self._heads) < 64:  # a few clients' pairs; a client varying them is only not helped
                self._heads[key] = verdict
        return verdict

    async def answer(self, call: HotCall, inflight: Any) -> bytes:
        """The JSON-RPC answer to a prepared call; its cancel scope is filed in its entry of the table of ids in
        flight (gateway.sessions.request_ids), so a `notifications/cancelled` naming it cancels it."""
        with anyio.CancelScope() as cancel:
            inflight.cancel = cancel
            try:
                body = await self.answer_unscoped(call)
            finally:
                inflight.cancel = None
        if cancel.cancelled_caught:
            self.served += 1
            return cancelled(call.request_id)
        return body

    async def answer_unscoped(self, call: HotCall) -> bytes:
        """The answer without a cancel scope of its own: for a call run at once (gateway.runtime.eager), which nothing can
        cancel before it is answered unless it suspends, and then its task's scope does (gateway.endpoints.hot_lane)."""
        request_id = call.request_id
        ctx = FastContext(call.method, call.params, request_id, call.version, call.request, call.connection, call.kept)
        try:
            result = await self._chain(call.method)(ctx)
        except MCPError as exc:
            body = _envelope(request_id, "error", exc.error.model_dump(by_alias=True, mode="json", exclude_unset=True))
        except ValidationError:  # as the SDK's dispatcher maps it
            body = _envelope(request_id, "error", INVALID_PARAMS)
        except Exception as exc:  # noqa: BLE001 - as the SDK's dispatcher answers a handler that raised
            logger.exception("handler for %r raised", call.method)
            body = _envelope(request_id, "error", {"code": 0, "message": str(exc)})
        else:  # a replayed result may come as its JSON (`_stable_text`)
            body = _enveloped(request_id, result) if type(result) is bytes else _envelope(request_id, "result", result)
        self.served += 1
        return body

    def _chain(self, method: str) -> Chain:
        """The server middleware around `method`'s handler and the SDK's result shaping, as the SDK composes it;
        made once per method (and again if the server's middleware list is replaced)."""
        middleware = self.server.middleware
        made = self._chains.get(method)
        if made is not None and made[0] is middleware:
            return made[1]
        handler, server = self.handlers[method], self.server

        # A layer of ours says when it has nothing to do here (`on_fast_path`): left out of the chain, it costs
        # nothing (a layer costs two coroutines a call); a layer that does not say is always in.
        layers = [
            layer for layer in middleware if (needed := getattr(layer, "on_fast_path", None)) is None or needed(method)
        ]
        stable = not layers  # no layer reads the handler's result: a replayed one may stand as its answer's JSON

        async def inner(ctx: FastContext) -> dict[str, Any] | bytes:
            result = await handler(ctx, None)
            if stable:
                text = _stable_text(server, ctx.method, ctx.protocol_version, result)
                if text is not None:
                    return text
            return sdk_adapter.serialize_result(server, ctx.connection, ctx.method, ctx.protocol_version, result)

        call: Chain = inner
        for layer in reversed(layers):
            call = _bind(layer, call)
        self._chains[method] = (middleware, call)
        return call


class HotCall(NamedTuple):
    """A request the fast path answers: what `prepare` checked, for `answer`."""

    method: str
    params: Any
    request_id: Any
    connection: Any
    version: str
    request: Any
    session_id: str
    kept: HeadDecisions | None = None


class HeadDecisions:
    """What the handlers decide from a request's head and its session alone (the caller: run id, identity,
    endpoint, client; the per-server endpoint's server), kept with a head the hot lane keeps (gateway.http.repeat_head)
    so it is decided once for every request that repeats it rather than once per request."""

    __slots__ = ("server", "caller")

    def __init__(self, server: str | None) -> None:
        self.server = server  # gateway.endpoints.per_server.server_of(request), as the head's path names it
        self.caller: Caller | None = None  # made by the first request's handler (gateway.mcp_server)


class FastContext:
    """The parts of the SDK's request context the gateway's handlers read."""

    __slots__ = ("method", "params", "request_id", "protocol_version", "request", "connection", "meta", "kept")

    def __init__(
        self,
        method: str,
        params: Any,
        request_id: Any,
        version: str,
        request: Any,
        connection: Any,
        kept: HeadDecisions | None = None,
    ) -> None:
        self.method = method
        self.params = params
        self.request_id = request_id
        self.protocol_version = version
        self.request = request  # None from the hot lane once `kept` holds what the handlers read it for
        self.connection = connection
        self.meta = None
        self.kept = kept

    @property
    def session(self) -> _FastSession:
        # Made when read: a repeated head's call, its caller kept, never reads it.
        return _FastSession(self.connection)


class _FastSession:
    __slots__ = ("connection",)

    def __init__(self, connection: Any) -> None:
        self.connection = connection  # what `sdk_adapter.connection_of` finds

    @property
    def client_params(self) -> Any:
        return self.connection.client_params

    async def send_request(self, *args: Any, **kwargs: Any) -> Any:
        # Only sessions that declared no sampling/elicitation/roots come here.
        raise MCPError(
            code=types.METHOD_NOT_FOUND, message="the client declared no capability to answer server requests"
        )

    async def report_progress(self, *args: Any, **kwargs: Any) -> None:
        return None  # requests asking for progress never take the fast path


def _bind(middleware: Any, call_next: Any) -> Any:
    def call(ctx: Any) -> Any:
        return middleware(ctx, call_next)  # the layer's own coroutine, awaited by the one before: no frame between

    return call


def _qualifies(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("method") not in HOT_METHODS or message.get("jsonrpc") != "2.0":
        return False
    if not message.keys() <= _ENVELOPE_KEYS:
        return False
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return False  # ids null/bool/float/... (or a notification): the SDK's path and its checks
    params = message.get("params")
    if params is None:
        return True
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    if meta is not None and (
        not isinstance(meta, dict)
        or "progressToken" in meta
        or any(str(k).startswith("io.modelcontextprotocol/") for k in meta)
    ):
        return False
    return True


def _accepts_server_requests(connection: Any) -> bool:
    capabilities = connection.client_params.capabilities
    return any(getattr(capabilities, name, None) is not None for name in _RELAY_CAPABILITIES)


def cancelled(request_id: Any) -> bytes:
    """As the SDK answers a cancelled handshake-era request."""
    return _envelope(request_id, "error", {"code": REQUEST_CANCELLED, "message": "Request cancelled"})


def _envelope(request_id: Any, kind: str, payload: Any) -> bytes:
    return compact({"jsonrpc": "2.0", "id": request_id, kind: payload}).encode()


def _enveloped(request_id: Any, result_text: bytes) -> bytes:
    """`_envelope(request_id, "result", result)` for a result whose JSON is `result_text`: the same bytes."""
    written = (
        b"%d" % request_id if type(request_id) is int else compact(request_id).encode()
    )  # an int: as JSON writes it
    return b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (written, result_text)


def _stable_text(server: Any, method: str, version: str, result: Any) -> bytes | None:
    """The JSON of a replayed result's answer, made at its first answer and kept with it (gateway.encoding.result_memo),
    when its shape depends on nothing but itself (sdk_adapter's plain shape); None: shape it as usual."""
    stable = result_memo.known(result)
    if stable is None or not sdk_adapter.plain_shaping(server, method, version):
        return None
    text = stable.plain_text
    if text is None:
        shaped = sdk_adapter.plain_text_result(result)
        text = stable.plain_text = b"" if shaped is None else compact(shaped).encode()
    return text or None  # b"": not a plain result, shaped by the SDK's way each time


async def _send_json(send: Any, body: bytes, session_id: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-length", str(len(body)).encode()),
                (b"content-type", b"application/json"),
                (MCP_SESSION_ID_HEADER.encode(), session_id.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
