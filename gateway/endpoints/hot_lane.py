"""The hot lane: an initialized session's `tools/call`, `tools/list` and `ping` answered at the HTTP protocol.

A hot request that goes the pipeline's way crosses uvicorn's ASGI cycle, eight ASGI layers, Starlette's
routing, the SDK's session manager and its transport before the fast path (gateway.endpoints.fast_path) answers
it: measured, most of a replayed call's CPU. The hot lane asks every layer of the pipeline's lists, in their
order, whether it would let this request through untouched (gateway.sessions.pipeline_verdicts: each layer's
`hot_head`, once per head, and `hot_body`, per request), and if every one would, answers it with the same
work (the fast path's own `prepare` and `answer`) and the same bookkeeping. The lane names no layer's
rule: a layer added to the lists is asked with no edit here, and one that gives no verdict shuts the lane.
What the layers decide today:

- the per-server paths: `/servers/<id>/mcp` is /mcp for every layer behind (a run in the path is left to them);
- the guard: Host/Origin, the token, JSON content type, the size cap, a body that parses as strictly (its
  JSON-RPC shape the fast path checks, as strictly as the guard);
- known servers; the worker that owns the session (--workers); no one-shot call, no identity to mint;
- the session: open in the admission table (so owned by this worker); the id: free on its session.

Then the endpoint behind the lists: the SDK's session, which would hand the request to its transport as it
is (`sdk_adapter.session_transport`), and plain JSON answers (the transport's adaptive decision, or
`--responses json`). The bookkeeping: the session is held busy, and the transport's idle countdown suspended,
while the answer is made (`sessions.hold`, `sdk_adapter.request_began`); the id is filed in the one table of
ids in flight (a `notifications/cancelled` cancels it there), released after.

Anything else - another path, no session, an id in flight, a refusal, an SSE
answer, a message the fast path declines - is declined before anything has run, and goes the
pipeline's way unchanged (gateway.http.hot_protocol replays it into uvicorn). When nothing a call does can wait
(a replay without live fallback, start-up settled: the router's `answers_at_once`), it is answered in the
event loop's turn that read it, without a task of its own (gateway.runtime.eager). `MCPGW_HOT_LANE=off` turns
the lane off, for side-by-side measurements and the test that both ways answer byte for byte alike.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import anyio
from starlette.requests import Request

from mcpgw.gateway.endpoints.fast_path import HOT_METHODS, FastPath, HeadDecisions, HotCall, cancelled
from mcpgw.gateway.endpoints.transport import AnswerPolicy
from mcpgw.gateway.http.commit_batch import Batch
from mcpgw.gateway.http.repeat_head import RepeatHead
from mcpgw.gateway.runtime import eager
from mcpgw.gateway.sessions import sdk_adapter
from mcpgw.gateway.sessions.pipeline_verdicts import DECLINED, HotHead, verdicts
from mcpgw.gateway.sessions.request_context import CONTEXT, RequestContext
from mcpgw.gateway.sessions.request_ids import InflightIds
from mcpgw.gateway.sessions.sessions import Session, SessionAdmission, hold, release


def enabled() -> bool:
    return os.environ.get("MCPGW_HOT_LANE", "on") != "off"


@dataclass(slots=True)
class Ready:
    """A request the hot lane answers, and what it holds while it does."""

    call: HotCall
    session: Session
    transport: Any
    message: dict[str, Any]
    entry: Any = None  # its entry in the table of ids in flight (`start` files it: see there)


class HotLane:
    def __init__(
        self,
        *,
        path: str,
        fast: FastPath,
        policy: AnswerPolicy,
        layers: list[Any],
        max_body: int,
        admission: SessionAdmission,
        ids: InflightIds,
        manager: Any,
        worker: int | None = None,
        at_once: Callable[[], bool] = lambda: False,
    ) -> None:
        self.path = path
        self.max_body = max_body  # the most body the HTTP protocol holds back for the lane (the guard's cap)
        self.at_once = at_once  # whether a call is answered without waiting (the router's `answers_at_once`)
        self.raw_path = path.encode("latin-1")
        # Every layer of the pipeline's lists, asked in their order (gateway.sessions.pipeline_verdicts); a layer
        # that gives no verdict shuts the lane (`open` False: every request goes the pipeline's way).
        asked = verdicts(layers)
        self.open = asked is not None
        self.head_verdicts, self.body_verdicts = asked if asked is not None else ([], [])
        self.batch = Batch()  # records of calls answered at once, committed per turn before their answers
        self.fast = fast
        self.policy = policy
        self.admission = admission
        self.ids = ids
        self.manager = manager
        # With --workers the session's owner answers (no other has it in its tables), and says so as
        # gateway.http.worker_routing does: the header the lane adds to the fast path's, as written.
        self.extra_block = b"x-mcpgw-worker: %d\r\n" % worker if worker is not None else b""
        self.served = 0
        self.started_at_once = 0  # of those, the calls begun in the turn that read them (gateway.runtime.eager)
        self.repeated_heads = 0  # of those, the requests whose head repeated the last one, read without the parser
        self.declined = 0  # candidates (a POST to the endpoint with a session id) that went the pipeline's way

    def candidate(self, url: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
        """From the request head alone: worth holding the body for (a POST is assumed)."""
        path = url.partition(b"?")[0]
        if not self.open or not (
            path == self.raw_path or (path.startswith(b"/servers/") and path.endswith(self.raw_path))
        ):
            return False
        return any(name == b"mcp-session-id" for name, _ in headers)

    def prepare(
        self,
        url: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        client: Any,
        server: Any,
        repeat: RepeatHead | None = None,
    ) -> Ready | None:
        """The request, if every layer would pass it untouched to the fast path; None otherwise. `repeat`: the
        head it repeats (gateway.http.repeat_head), read without the parser, whose verdicts on the head are kept with
        it; declined, it is read again the usual way (and counted then)."""
        head: _Head | _Declined | None
        if repeat is None:
            head = self._head(url, headers)
        else:
            head = repeat.lane_state
            if head is None:
                head = repeat.lane_state = self._head(url, headers) or _DECLINED
        if head is None or head is _DECLINED:
            ready = None
        else:  # a repeated head's Content-Length is the one header not as kept
            length = None if repeat is None else headers[repeat.length_at][1].decode("latin-1")
            ready = self._prepare(head, headers, body, client, server, length)
        if ready is None and repeat is None:
            self.declined += 1
        return ready

    def _head(self, url: bytes, headers: list[tuple[bytes, bytes]]) -> _Head | None:
        """What the lane decides from the request's head: None when a layer would not pass it untouched."""
        raw_path, _, query = url.partition(b"?")
        ctx = _context(headers, query)
        if ctx.session_id is None or ctx.modern:  # the fast path answers on a session (the SDK serves the rest)
            return None
        head = HotHead(raw_path.decode("latin-1"), raw_path, query, headers, ctx.headers, ctx.session_id, ctx.modern)
        for verdict in self.head_verdicts:  # each layer, in the pipeline's order (a per-server path rewritten)
            if not verdict(head):
                return None
        if head.path != self.path:  # the endpoint the fast path serves, as the layers leave the path
            return None
        heads = _HeaderView([(name, value) for name, value in headers if name != b"content-length"])
        return _Head(
            ctx.headers,
            query,
            ctx.session_id,
            self.path,
            self.raw_path,
            head.server,
            head.endpoint,
            heads,
            HeadDecisions(head.server),
            head,
        )

    def _prepare(
        self, head: _Head, headers: list[tuple[bytes, bytes]], body: bytes, client: Any, server: Any, length: str | None
    ) -> Ready | None:
        message = None  # parsed by the layer that parses bodies (the guard), then judged by the others
        for verdict in self.body_verdicts:
            message = verdict(head.offered, body, message)
            if message is DECLINED:
                return None
        # Then what the endpoint behind the lists needs: a hot method (the fast path's checks ask all the guard's
        # shape check asks), the SDK's transport of the session, plain JSON answers.
        if type(message) is not dict:
            return None
        method = message.get("method")
        if type(method) is not str or method not in HOT_METHODS:
            return None
        session_id = head.session_id
        session = self.admission.sessions.get(session_id)
        if session is None:
            return None
        transport = sdk_adapter.session_transport(self.manager, session_id)
        if transport is None:
            return None
        if self.policy.fast_path is not self.fast:
            return None
        # Plain JSON answers only (gateway.endpoints.transport's json_answer: the session relays nothing; the rest it asks - an
        # id, not initialize, no progress token or envelope _meta - the fast path's own checks ask too, in `prepare`).
        if not (self.policy.mode == "json" or (self.policy.mode == "adaptive" and not session.relay)):
            return None
        # The handlers read the request (and its context) only to decide what `kept` keeps (gateway.mcp_server's
        # caller): made for the head's requests until one of them has decided it.
        request = None
        if head.kept.caller is None:
            decoded = head.decoded
            if length is not None:
                decoded = decoded.copy()
                decoded["content-length"] = length
            ctx = RequestContext(decoded, head.query, head.server, head.endpoint)
            ctx.message = message
            request = Request(
                {
                    "type": "http",
                    "asgi": {"version": "3.0", "spec_version": "2.3"},
                    "http_version": "1.1",
                    "method": "POST",
                    "scheme": "http",
                    "path": head.path,
                    "raw_path": head.raw_path,
                    "query_string": head.query,
                    "root_path": "",
                    "headers": headers,
                    "client": client,
                    "server": server,
                    CONTEXT: ctx,
                }
            )
        call = self.fast.prepare(transport, session_id, message, request, head.heads, head.kept)
        if call is None:
            return None
        return Ready(call, session, transport, message)  # its id free: checked above

    def start(self, ready: Ready) -> eager.Done[bytes] | eager.Later[bytes] | None:
        """The answer made at once (gateway.runtime.eager) when nothing it does can wait: `Done` holds it, `Later` the
        rest of a call that suspended after all (for `finish`, in a task). None: make it in a task (`answer`)."""
        if not self.at_once():
            ready.entry = self._file(ready)
            return None
        self.started_at_once += 1
        step = eager.start(self._answer(ready, scoped=False))
        if isinstance(step, eager.Later):  # it waits after all: its session's idle countdown waits with it
            # A call answered in this turn has its id in flight only while nothing else can run (nor read the
            # table): it is filed only if it waits, before anything else runs.
            ready.entry = self._file(ready)
            sdk_adapter.request_waits(ready.transport)
        return step

    def _file(self, ready: Ready) -> Any:
        """File the call's id in the table of ids in flight (free since `prepare` found it so, in this same step)."""
        return self.ids.file(ready.call.session_id, ready.call.request_id)

    async def answer(self, ready: Ready) -> bytes:
        """The JSON-RPC answer's body, made as the pipeline's fast path makes it, with its bookkeeping."""
        return await self._answer(ready, scoped=True)

    async def finish(self, ready: Ready, later: eager.Later[bytes]) -> bytes:
        """The rest of a call started at once that suspended: cancellable from here on, as `answer`'s."""
        with anyio.CancelScope() as cancel:
            ready.entry.cancel = cancel  # while the call holds its id (its end releases the entry)
            try:
                return await later
            finally:
                ready.entry.cancel = None
        self.fast.served += 1
        self.served += 1
        return cancelled(ready.call.request_id)  # reached only when the scope caught its cancellation

    async def _answer(self, ready: Ready, *, scoped: bool) -> bytes:
        hold(ready.session)
        sdk_adapter.request_began(ready.transport, suspend=scoped)  # run at once (not scoped): see `start`
        try:
            if scoped:
                body = await self.fast.answer(ready.call, ready.entry)
            else:
                body = await self.fast.answer_unscoped(ready.call)
        finally:
            sdk_adapter.request_ended(ready.transport, self.manager.session_idle_timeout)
            release(ready.session)
            if ready.entry is not None:
                self.ids.release(ready.call.session_id, ready.entry)
        self.served += 1
        return body


class _Head(NamedTuple):
    """What the lane decided from a request's head (kept with a repeated head: gateway.http.repeat_head)."""

    decoded: dict[str, str]  # the headers, decoded as gateway.sessions.request_context decodes them
    query: bytes
    session_id: str
    path: str  # the MCP endpoint's (a per-server endpoint's request is served as the pipeline rewrites it)
    raw_path: bytes
    server: str | None  # a per-server endpoint's server, and the path as the client called it
    endpoint: str | None
    heads: _HeaderView  # its headers as the fast path's header checks read them (all but its length: see _HeaderView)
    kept: HeadDecisions  # what the handlers decide from it (its caller): once for all the requests repeating it
    offered: HotHead  # the head as the layers saw it, for their verdicts on each body


class _Declined(enum.Enum):
    DECLINED = "declined"


_DECLINED: Final = _Declined.DECLINED  # a repeated head the lane would not take


def _context(headers: list[tuple[bytes, bytes]], query: bytes) -> RequestContext:
    """The request's context, decoded as `request_context.context_of` decodes a scope's headers."""
    decoded: dict[str, str] = {}
    for key, value in headers:
        name = key.decode("latin-1")
        text = value.decode("latin-1")
        decoded[name] = f"{decoded[name]}; {text}" if name == "cookie" and name in decoded else text
    return RequestContext(decoded, query)


class _HeaderView:
    """A request's headers as the SDK's header checks read them (`request.headers.get`, the first of a
    repeated name, as Starlette's), from the raw list, without building Starlette's `Headers`. Kept with the
    lane's verdicts on a head (gateway.http.repeat_head), so read once per name for all the requests repeating it:
    made without Content-Length, the one header a repeat changes (the checks read Accept and Content-Type)."""

    __slots__ = ("_raw", "_read", "ok")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._raw = raw  # names lowercased by uvicorn
        self._read: dict[tuple[str, str], str] = {}  # (name, default) -> its value, read once
        self.ok: bool | None = None  # the fast path's verdict on them (FastPath.prepare), once made

    @property
    def headers(self) -> _HeaderView:
        # A property, not `self.headers = self`: that cycle left every request's _HeaderView and its header list for the
        # cyclic GC to find (3 objects a call; the GC's CPU per call 2.6 us before, 1.0 after, replaying).
        return self

    def get(self, name: str, default: str = "") -> str:
        value = self._read.get((name, default))
        if value is None:
            value = self._read[(name, default)] = self._find(name, default)
        return value

    def _find(self, name: str, default: str) -> str:
        key = name.lower().encode("latin-1")
        for header, value in self._raw:
            if header == key:
                return value.decode("latin-1")
        return default
