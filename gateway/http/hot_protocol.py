"""uvicorn's HTTP protocol with the hot lane (gateway.endpoints.hot_lane) in front of its ASGI cycle.

A POST to the MCP endpoint that names a session is held back at its head: its body is collected here
instead of being handed to a new ASGI task. Whole, it is offered to the hot lane; taken, it is answered
at once when nothing it does can wait (gateway.runtime.eager), else from a plain task that writes one response;
declined (or its body slower than HOT_BODY_WAIT), it is replayed into uvicorn exactly as uvicorn would
have met it (head, body so far, end), so everything else keeps uvicorn's and the pipeline's way.

While the lane answers, a stand-in (`_HotCycle`) holds uvicorn's place of the request's cycle, so
uvicorn's own state machine does the rest: a pipelined request waits behind it, shutdown lets it finish
(then closes), a disconnect marks it, and uvicorn's `on_response_complete` starts what waits. Only its
keep-alive timer, armed per answer and cancelled by the next read, is replaced after a hot answer by one
check per connection that closes it once idle as long (`_idle_check`). The response head is uvicorn's: its status line, its default headers (date,
server), the headers the fast path sends, `connection: close` when the connection ends.

It reads uvicorn's protocol state (private): `UVICORN_SURFACE` lists every name, and `missing()` says which
the installed uvicorn lacks (tests/gateway/test_hot_lane.py fails on any): the one adapter to uvicorn's
private state (the other protocol layers, http_head and write_coalescing, only extend its public callbacks
and `loop`). pyproject.toml pins the uvicorn versions that check passes on (0.30 to 0.54).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, cast

from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mcpgw.gateway.http.head_hook import HeadHook
from mcpgw.gateway.http.repeat_head import RepeatHead
from mcpgw.gateway.http.stopping import stopped_body, stopped_headers
from mcpgw.gateway.runtime import eager
from mcpgw.gateway.sessions.request_context import CONNECTION, Connection

logger = logging.getLogger(__name__)

HOT_BODY_WAIT = 1.0  # seconds a held request's body may take before it goes uvicorn's way (and its deadline)

# uvicorn internals read or driven here: attributes set by HttpToolsProtocol.__init__/connection_made, methods
UVICORN_SURFACE = (
    "cycle",
    "pipeline",
    "url",
    "headers",
    "expect_100_continue",
    "parser",
    "server_state",
    "tasks",
    "flow",
    "client",
    "server",
    "access_log",
    "access_logger",
    "loop",
    "transport",
    "timeout_keep_alive",
    "timeout_keep_alive_task",
)
UVICORN_METHODS = (
    "on_message_begin",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "on_response_complete",
    "shutdown",
    "data_received",
    "connection_lost",
    "timeout_keep_alive_handler",
    "_unset_keepalive_if_required",
)


def missing(protocol: Any) -> list[str]:
    """The names above an HttpToolsProtocol instance (connected, a request head begun) lacks, and a missing
    STATUS_LINE."""
    gone = [name for name in UVICORN_SURFACE if not hasattr(protocol, name)]
    if hasattr(protocol, "flow") and not hasattr(protocol.flow, "read_paused"):
        gone.append("flow.read_paused")
    gone += [name for name in UVICORN_METHODS if not callable(getattr(HttpToolsProtocol, name, None))]
    if not isinstance(getattr(httptools_impl, "STATUS_LINE", None), dict):
        gone.append("STATUS_LINE")
    return gone


class _NoEvent:
    __slots__ = ()

    def set(self) -> None:
        pass


_CLOSES = re.compile(rb"(?im)^connection:[^\r\n]*close")  # a Connection header that closes (any case)


class _HotCycle:
    """Stands where uvicorn keeps the request's `RequestResponseCycle` while the hot lane answers it."""

    __slots__ = ("response_complete", "disconnected", "keep_alive", "message_event")

    def __init__(self, keep_alive: bool) -> None:
        self.response_complete = False
        self.disconnected = False
        self.keep_alive = keep_alive  # uvicorn's shutdown clears it: the answer then closes the connection
        self.message_event = _NoEvent()


class HotLaneProtocol(HeadHook):
    hot_lane: Any = (
        None  # gateway.endpoints.hot_lane.HotLane, set on a subclass by gateway.endpoints.http_app.serve_http
    )
    _hot_body: bytearray | None = None  # the body of a request held for the lane, while it arrives
    _hot_keep_alive = True
    _hot_timer: asyncio.TimerHandle | None = None
    _idle_timer: asyncio.TimerHandle | None = None  # one keep-alive check per connection, not a timer per answer
    _last_seen = 0.0  # loop time of the last read or answer
    _parsing = False  # the parser is inside a request (between its first byte and its end)
    _repeat: RepeatHead | None = None  # the head of the last request the lane took, for one that repeats it
    _begun = 0  # requests the parser began in the current read
    _read_head: bytes | None = None  # the whole head the current read began with (a request's first bytes)
    _message_head: bytes | None = None  # the head of the request being parsed, when a read began with it whole
    _unread: bytearray | None = None  # a repeated head's request held (not shown to the parser) while its body arrives
    _unread_end = 0  # its length, head and body
    _unread_match: Any = None  # what its head's match found (RepeatHead.match), for when the body is in
    _unread_since = 0.0  # loop time its head arrived
    _unread_timer: asyncio.TimerHandle | None = None  # one body deadline check per connection (`_unread_check`)
    _defaults: tuple[Any, bytes, bool] = (None, b"", False)  # uvicorn's default headers, written (`_default_block`)
    _logs_answers: bool | None = None  # whether uvicorn's access log writes this connection's answers (asked once)
    _tcp_connection: Connection | None = None  # this connection, as its requests' scopes name it

    def on_message_begin(self) -> None:
        self._parsing = True
        self._begun += 1
        self._message_head = self._read_head if self._begun == 1 else None  # its head, if the read began with it
        super().on_message_begin()
        connection = self._tcp_connection
        if connection is None:
            connection = self._tcp_connection = Connection()
        # An untagged client's identity is its connection's (client_identity); uvicorn's HTTPScope names no extension keys.
        self.scope[CONNECTION] = connection  # type: ignore[literal-required]

    def on_headers_complete(self) -> None:
        lane = self.hot_lane
        if (
            lane is not None
            and (self.cycle is None or self.cycle.response_complete)
            and not self.pipeline
            and not self.expect_100_continue
            and self.parser.get_method() == b"POST"
            and self.parser.get_http_version() == "1.1"
            and not self.parser.should_upgrade()
            and lane.candidate(self.url, self.headers)
        ):
            self._hot_body = bytearray()
            self._hot_keep_alive = self.parser.should_keep_alive()
            self.head_complete()  # the head checks' part of on_headers_complete; uvicorn's waits (`_go_uvicorns_way`)
            return
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        self._last_seen = self.loop.time()
        if self.timeout_keep_alive_task is not None:  # any read stops uvicorn's keep-alive timer, as its own read does
            self._unset_keepalive_if_required()
        unread = self._unread
        if unread is not None:  # a repeated head's request, its body arriving: not shown to the parser yet
            unread += data
            if len(unread) < self._unread_end:
                return
            self._unread = None
            data = bytes(unread)
            matched, self._unread_match = self._unread_match, None
            if len(data) == self._unread_end and not self.transport.is_closing():  # whole: taken as its head matched
                # (`_unread` is set only by `_answer_repeat`, for the repeat head it was given)
                if not self._take_matched(cast(RepeatHead, self._repeat), data, matched):
                    self._read(data, True)
                return
        repeat = self._repeat
        idle = not self._parsing and self._hot_body is None
        if repeat is not None and idle and self._answer_repeat(repeat, data):
            return
        self._read(data, idle)

    def _read(self, data: bytes, idle: bool) -> None:
        """The parser's way (uvicorn's). A read that begins a request and holds its whole head (its body may come
        later) is remembered, so the head of a request the lane takes can be kept (gateway.http.repeat_head)."""
        self._begun = 0
        end = data.find(b"\r\n\r\n") if idle and data.startswith(b"POST ") else -1
        self._read_head = data[: end + 4] if end >= 0 else None
        super().data_received(data)
        if self._hot_body is not None and self._hot_timer is None:  # its body comes in more than one read
            self._hot_timer = self.loop.call_later(HOT_BODY_WAIT, self._body_too_slow)

    def _answer_repeat(self, repeat: RepeatHead, data: bytes) -> bool:
        """Answer what arrived when it is one request repeating the last hot head (gateway.http.repeat_head), without
        the parser, if the lane takes it, or hold it while its body arrives; False (nothing done): the parser's."""
        if (
            self.pipeline
            or (self.cycle is not None and not self.cycle.response_complete)
            or self.transport.is_closing()
        ):
            return False
        matched = repeat.match(data)
        if matched is None:
            return False
        _, body_at, end = matched
        if len(data) != end:
            if len(data) > end or end - body_at > self.hot_lane.max_body:
                return False  # more than one request, or a body the guard refuses: the parser's, then uvicorn's
            self._unread, self._unread_end, self._unread_match = bytearray(data), end, matched
            self._unread_since = self._last_seen  # this read's time (data_received)
            if self._unread_timer is None:
                self._unread_timer = self.loop.call_later(HOT_BODY_WAIT, self._unread_check)
            return True
        return self._take_matched(repeat, data, matched)

    def _take_matched(self, repeat: RepeatHead, data: bytes, matched: Any) -> bool:
        """Offer the lane a whole request whose head `repeat` matched; False (nothing done): the parser's."""
        headers, body_at, _ = matched
        ready = self.hot_lane.prepare(repeat.url, headers, data[body_at:], self.client, self.server, repeat=repeat)
        if ready is None:
            return False
        self.url, self.headers = repeat.url, headers  # as uvicorn's parser would have left them
        self._hot_keep_alive = repeat.keep_alive
        self.hot_lane.repeated_heads += 1
        self._take(ready)
        return True

    def _unread_check(self) -> None:
        """A held body's deadline: HOT_BODY_WAIT after its head, it goes the parser's way. One timer per connection,
        left armed when a body comes in time (most come within the same millisecond) and checked when it fires,
        rather than a timer armed and cancelled per request (uvloop's timers cost a few us each)."""
        self._unread_timer = None
        if self._unread is None:
            return  # no body awaited now: the next head held arms it again
        waited = self.loop.time() - self._unread_since
        if waited >= HOT_BODY_WAIT:
            self._read_unread()
        else:
            self._unread_timer = self.loop.call_later(HOT_BODY_WAIT - waited, self._unread_check)

    def _stop_unread_timer(self) -> None:
        if self._unread_timer is not None:
            self._unread_timer.cancel()
            self._unread_timer = None

    def _read_unread(self) -> None:
        """What was held while a repeated head's body arrived, shown to the parser: it goes on from there."""
        unread, self._unread, self._unread_match = self._unread, None, None
        if unread is not None:
            self._read(bytes(unread), True)

    def on_body(self, body: bytes) -> None:
        held = self._hot_body
        if held is None:
            super().on_body(body)
            return
        held += body
        if len(held) > self.hot_lane.max_body:
            self._go_uvicorns_way(complete=False)  # the guard refuses it there, in its words

    def on_message_complete(self) -> None:
        self._parsing = False
        head, self._message_head = self._message_head, None
        held = self._hot_body
        if held is None:
            super().on_message_complete()
            return
        body = bytes(held)
        ready = self.hot_lane.prepare(self.url, self.headers, body, self.client, self.server)
        if ready is None:
            self._go_uvicorns_way(complete=True)
            return
        self._hot_body = None
        self._stop_timer()
        if head is not None:
            self._repeat = RepeatHead.of(head, len(body), self.url, self.headers, self._hot_keep_alive)
        self._take(ready)

    def _take(self, ready: Any) -> None:
        """Answer a request the lane took: at once when it can (gateway.runtime.eager), else from a task."""
        cycle = self.cycle = _HotCycle(self._hot_keep_alive)  # type: ignore[assignment]  # stands in for uvicorn's cycle
        batch = self.hot_lane.batch
        batch.collect(self.loop)  # its record is held, committed with the turn's others (gateway.http.commit_batch)
        try:
            step = self.hot_lane.start(ready)
        except Exception:  # noqa: BLE001 - a bug, raised before the call's first wait
            logger.exception("the hot lane failed to answer a request")
            step = eager.Done(None)
        finally:
            batch.stop()
        if isinstance(step, eager.Done):  # answered in this turn: no task; written once its record is committed
            batch.after(self._reply, ready, cycle, step.value)
            return
        if step is None:
            task = self.loop.create_task(self._answer(ready, cycle, self.hot_lane.answer(ready)))
        else:  # started at once, and suspended: the rest in a task, in the context it began in
            task = self.loop.create_task(
                self._answer(ready, cycle, self.hot_lane.finish(ready, step)), context=step.context
            )
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def shutdown(self) -> None:
        if self._unread is not None:  # a request arriving, not shown to the parser: shown now, then as below
            self._stop_unread_timer()
            self._read_unread()
        if self._hot_body is not None:  # a request arriving: uvicorn lets it finish, as any it has begun
            self._go_uvicorns_way(complete=False)
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        self._hot_body = self._unread = self._unread_match = None
        self._stop_timer()
        self._stop_unread_timer()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        super().connection_lost(exc)

    def _body_too_slow(self) -> None:
        self._hot_timer = None
        if self._hot_body is not None:
            self.hot_lane.declined += 1
            self._go_uvicorns_way(complete=False)

    def _go_uvicorns_way(self, *, complete: bool) -> None:
        """Hand the held request to uvicorn as if it had never been held: its head, its body so far, its end."""
        body = bytes(self._hot_body or b"")
        self._hot_body = None
        self._stop_timer()
        super().on_headers_complete()
        if body:
            super().on_body(body)
        if complete:
            super().on_message_complete()

    def _stop_timer(self) -> None:
        if self._hot_timer is not None:
            self._hot_timer.cancel()
            self._hot_timer = None

    async def _answer(self, ready: Any, cycle: _HotCycle, answering: Any) -> None:
        batch = self.hot_lane.batch
        batch.collect_in_task(
            self.loop
        )  # its record is held, committed with its turn's others (gateway.http.commit_batch)
        try:
            body = await answering
        except asyncio.CancelledError:  # cut off by shutdown: answered as gateway.http.stopping answers the pipeline's
            body = stopped_body(ready.message)
            batch.after(self._respond, cycle, 503, stopped_headers(body), body)
            return
        except Exception:  # noqa: BLE001 - a bug
            logger.exception("the hot lane failed to answer a request")
            body = None
        batch.after(self._reply, ready, cycle, body)

    def _reply(self, ready: Any, cycle: _HotCycle, body: bytes | None) -> None:
        """The answer's body, or None for a call that raised (a bug: uvicorn's answer to an app that raised)."""
        if body is None:
            self._respond(
                cycle,
                500,
                [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", b"21"),
                    (b"connection", b"close"),
                ],
                b"Internal Server Error",
            )
            return
        # The lane's own headers, written as `_respond` writes a header list (none of them a Connection header).
        block = b"content-length: %d\r\ncontent-type: application/json\r\nmcp-session-id: %b\r\n%b" % (
            len(body),
            ready.call.session_id.encode("latin-1"),
            self.hot_lane.extra_block,
        )
        self._send(cycle, 200, block, False, body)

    def _respond(self, cycle: _HotCycle, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        block = b"".join(b"%b: %b\r\n" % header for header in headers)
        self._send(cycle, status, block, any(name == b"connection" for name, _ in headers), body)

    def _default_block(self) -> tuple[bytes, bool]:
        """uvicorn's default headers (date, server) as written, and whether they close the connection: made again
        only when uvicorn replaces its list (once a second, for the date)."""
        defaults = self.server_state.default_headers
        made = self._defaults  # kept per connection: made at most once a second for each (a few us)
        if made[0] is not defaults:
            block = b"".join(b"%b: %b\r\n" % header for header in defaults)
            closes = any(name == b"connection" and b"close" in value.lower() for name, value in defaults)
            made = self._defaults = (defaults, block, closes)
        return made[1], made[2]

    def _send(self, cycle: _HotCycle, status: int, block: bytes, has_connection: bool, body: bytes) -> None:
        """Write the answer: status line, uvicorn's default headers, `block` (the answer's headers, written;
        `has_connection`: one of them is a Connection header), then the body."""
        if cycle.disconnected or self.transport.is_closing():
            cycle.response_complete = True
            return
        defaults, closes = self._default_block()
        if closes or (has_connection and _CLOSES.search(block)):
            cycle.keep_alive = False
        keep_alive = cycle.keep_alive
        content = [httptools_impl.STATUS_LINE[status], defaults, block]
        if not keep_alive and not has_connection:
            content.append(b"connection: close\r\n")
        content += (b"\r\n", body)
        logs = self._logs_answers
        if logs is None:  # asked once per connection
            logs = self._logs_answers = bool(self.access_log and self.access_logger.isEnabledFor(logging.INFO))
        if logs:  # its arguments made only if written: uvicorn's five, which its access formatter reads
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                "%s:%d" % self.client if self.client else "-",
                "POST",
                self.url.decode("latin-1"),
                "1.1",
                status,
            )
        whole = getattr(self.transport, "write_whole", self.transport.write)  # gateway.http.write_coalescing: no wait
        whole(b"".join(content))
        cycle.response_complete = True
        if not keep_alive:
            self.transport.close()
        if self.pipeline or not keep_alive:
            self.on_response_complete()  # uvicorn's own: starts what waits behind, arms its keep-alive timer
            return
        # uvicorn's on_response_complete, but for its timer armed per answer (and cancelled by the next read):
        # one check per connection, re-armed for what is left of the idle time.
        self.server_state.total_requests += 1
        flow = self.flow
        if flow.read_paused:
            flow.resume_reading()
        self._last_seen = self.loop.time()
        if self._idle_timer is None:
            self._idle_timer = self.loop.call_later(self.timeout_keep_alive, self._idle_check)

    def _idle_check(self) -> None:
        self._idle_timer = None
        if (
            self.transport.is_closing()
            or self._hot_body is not None
            or self._unread is not None
            or (self.cycle is not None and not self.cycle.response_complete)
        ):
            return  # closed, or a request under way: its answer re-arms a check (the lane's) or uvicorn's timer
        idle = self.loop.time() - self._last_seen
        if idle >= self.timeout_keep_alive:
            self.timeout_keep_alive_handler()  # uvicorn's: closes the connection
        else:
            self._idle_timer = self.loop.call_later(self.timeout_keep_alive - idle, self._idle_check)
