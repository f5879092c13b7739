"""The HTTP guard's message checks for `mcpgw serve --stdio`: a bad line gets an answer.

The SDK's stdio reader drops a line it cannot validate without a word, so a client
whose request had a usable id but a wrong shape (`params` a list, `jsonrpc` "1.0")
waits for an answer forever. Here each line is checked as an HTTP body is
(`gateway.endpoints.http_guard.parse_message`): good lines go on to the SDK unchanged, and a
bad one is answered with a one-line JSON-RPC error carrying its id when it has one.

The line is also read for what the SDK would choke on: a leading byte order mark is dropped, and a
lone surrogate, `NaN` or `Infinity` is refused (`parse_json`) rather than left to crash the writer.

An id already in flight is refused too, as over HTTP (gateway.sessions.request_ids): the SDK would run both
requests and answer both under the one id, so the client could not tell which answer is whose (and a
cancellation would reach only the second). The server's answers free their ids on the way out
(`AnsweredIds`); a `notifications/cancelled` frees its id at once, since a cancelled request is never answered.
That table also lets the end of input wait for the answers still owed: a script that pipes its requests in
and closes stdin gets every answer, not only those that were quick (`drain_timeout` bounds the wait).

stdin is read by a daemon thread of its own (`StdinLines`): a blocked read cannot be interrupted, and
waiting for it (in a worker thread of anyio's, which the interpreter's exit waits for) made the gateway deaf
to SIGTERM, and in live mode to a first Ctrl-C, while stdin stayed open.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from mcpgw.gateway.encoding.json_messages import parse_message, valid_id

ENVELOPE_VERSION = "io.modelcontextprotocol/protocolVersion"  # a 2026-07-28 request's version, in params._meta


class StdinLines:
    """The lines of a copy of fd 0 (the upstreams get stdin pipes of their own, and closing it leaves
    sys.stdin alone), read by a daemon thread of its own: a worker thread of anyio's would be waited for at
    the interpreter's exit, and a blocked read of an open stdin never ends."""

    def __init__(self) -> None:
        self._file = io.TextIOWrapper(os.fdopen(os.dup(sys.stdin.fileno()), "rb"), encoding="utf-8", errors="replace")
        self._receive: MemoryObjectReceiveStream[str] | None = None

    def __aiter__(self) -> StdinLines:
        if self._receive is None:
            send, self._receive = anyio.create_memory_object_stream[str](1)
            token = anyio.lowlevel.current_token()
            threading.Thread(target=self._read, args=(send, token), name="mcpgw-stdin", daemon=True).start()
        return self

    async def __anext__(self) -> str:
        assert self._receive is not None
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def _read(self, send: MemoryObjectSendStream[str], token: Any) -> None:
        try:
            for line in iter(self._file.readline, ""):
                anyio.from_thread.run(send.send, line, token=token)  # waits for the reader: no line piles up
            anyio.from_thread.run_sync(send.close, token=token)
        except Exception:  # noqa: BLE001 - the session (or the loop) has ended: nobody reads on
            return

    async def aclose(self) -> None:
        if self._receive is not None:
            self._receive.close()  # a read still blocked in the thread ends with the process


class CheckedLines:
    """Lines of the process's stdin for `stdio_server(stdin=...)`; each bad line becomes a refusal."""

    def __init__(self, source: Any = None, drain_timeout: float = 0.0) -> None:
        self._source = source or StdinLines()
        self.drain_timeout = drain_timeout  # at the end of input, how long to wait for the answers still owed
        self._drained: anyio.Event | None = None
        refusals: tuple[MemoryObjectSendStream[SessionMessage], MemoryObjectReceiveStream[SessionMessage]]
        refusals = anyio.create_memory_object_stream(100)
        self._send, self.refusals = refusals
        self._initialize_seen = False
        self.in_flight: set[tuple[type, Any]] = set()  # ids of requests passed on and not yet answered

    async def __aiter__(self) -> AsyncIterator[str]:
        try:
            async for line in self._source:
                # A byte order mark (some Windows tools write one) is not part of the message.
                line = line.lstrip("\ufeff")
                if not line.strip():
                    continue
                # "surrogatepass": a raw lone surrogate reaches parse_message, which refuses it with an answer
                parsed, problem = parse_message(line.encode("utf-8", "surrogatepass"))
                if problem is None:
                    problem = self._before_initialize(parsed) or self._id_in_flight(parsed)
                if problem is None:
                    yield line
                    continue
                _, code, message = problem
                await self._send.send(
                    SessionMessage(
                        types.JSONRPCError(
                            jsonrpc="2.0", id=_id_of(line), error=types.ErrorData(code=code, message=message)
                        )
                    )
                )
            if self.in_flight:  # end of input: the requests read before it are answered before the session ends
                self._drained = anyio.Event()
                with anyio.move_on_after(self.drain_timeout):
                    await self._drained.wait()
        finally:
            self._send.close()
            await self._source.aclose()

    def _before_initialize(self, message: Any) -> tuple[int, int, str] | None:
        """A handshake-era request before any `initialize`: the SDK answers it "Invalid request parameters",
        which names neither the fault nor the fix (over HTTP the same client is told its session is missing).
        `ping` is allowed then (the spec says so); a request carrying the 2026-07-28 envelope needs no
        handshake and goes on to the SDK."""
        if self._initialize_seen or not isinstance(message, dict):
            return None
        method = message.get("method")
        if method == "initialize":
            self._initialize_seen = True
            return None
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if "id" not in message or method in (None, "ping") or (isinstance(meta, dict) and ENVELOPE_VERSION in meta):
            return None
        return (
            400,
            -32600,
            (
                f"Invalid Request: {method} before initialize: send initialize (then "
                "notifications/initialized) first, or, at protocol 2026-07-28, the protocol envelope in "
                "params._meta"
            ),
        )

    def _id_in_flight(self, message: Any) -> tuple[int, int, str] | None:
        """File a request's id; refuse it if that very id (same type, same value) is in flight."""
        if not isinstance(message, dict) or "method" not in message:
            return None
        if "id" not in message:
            params = message.get("params")
            if message["method"] == "notifications/cancelled" and isinstance(params, dict) and "requestId" in params:
                self._cancelled(params["requestId"])
            return None
        key = (type(message["id"]), message["id"])
        if key in self.in_flight:
            return (
                400,
                -32600,
                (
                    f"Invalid Request: id {json.dumps(message['id'])} is already in use by a request in "
                    "flight on this connection; use a new id for each request"
                ),
            )
        self.in_flight.add(key)
        return None

    def _cancelled(self, request_id: Any) -> None:
        """A cancelled request is never answered: free its id, matched as the SDK matches it (`7` and `"7"` alike)."""
        target = _coerced(request_id)
        for key in [k for k in self.in_flight if _coerced(k[1]) == target]:
            self.answered(key[1])

    def answered(self, request_id: Any) -> None:
        """Free an id: its request was answered (or cancelled)."""
        self.in_flight.discard((type(request_id), request_id))
        if not self.in_flight and self._drained is not None:
            self._drained.set()


class AnsweredIds:
    """The server's way to stdout: each answer it writes frees its request's id in `lines` once handed on (the
    client, having read the answer, may use the id again). Refusals go out beside it, freeing nothing."""

    def __init__(self, write: MemoryObjectSendStream[SessionMessage], lines: CheckedLines) -> None:
        self._write = write
        self._lines = lines

    async def send(self, item: SessionMessage) -> None:
        await self._write.send(item)  # handed to stdout's writer: freed in this same step, before it is written
        message = getattr(item.message, "root", item.message)
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
            self._lines.answered(message.id)

    async def aclose(self) -> None:
        await self._write.aclose()

    async def __aenter__(self) -> AnsweredIds:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def answer_refusals(
    refusals: MemoryObjectReceiveStream[SessionMessage], write: MemoryObjectSendStream[SessionMessage]
) -> None:
    """Send each refusal out the same way as the server's answers (one writer owns stdout)."""
    async with refusals:
        async for message in refusals:
            try:
                await write.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the session has ended: nobody is left to answer


def _coerced(request_id: Any) -> Any:
    """An id as the SDK correlates it (`mcp.shared.dispatcher.coerce_request_id`): a string of an integer is the integer."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


def _id_of(line: str) -> Any:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, str) and not request_id.isascii():
        try:  # an id holding a lone surrogate cannot be written back out: answered with id null
            request_id.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return request_id if valid_id(request_id) else None
