"""A lean JSON-RPC client for stdio upstreams: plain dicts, one task hop less.

The SDK's dispatcher models every message both ways (pydantic validation in,
model dumps out) and moves each through memory streams and an extra task; for
a gateway that forwards results as the server wrote them that is most of the
upstream side's CPU, measured. This client keeps the same surface the
gateway uses (`run`, `send_raw_request`, `notify`) and the same contracts:
MCPError for error responses, CONNECTION_CLOSED when the connection ends with
requests in flight, progress by the request id as token, a courtesy
`notifications/cancelled` when a caller abandons a request, server->client
requests answered through `on_request`, notifications through `on_notify`.
Messages come from `stdio_process`'s inbox, which keeps the size limits, and are
dispatched as they are read (an answer wakes its caller with no task between).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR

from mcpgw.gateway.runtime.deadlines import Deadline
from mcpgw.gateway.upstreams.stdio_transport import Inbox, Pipe

logger = logging.getLogger(__name__)

OnRequest = Callable[[Any, str, Any], Awaitable[dict[str, Any]]]
OnNotify = Callable[[Any, str, Any], Awaitable[None]]
_CLOSED = {"error": {"code": CONNECTION_CLOSED, "message": "Connection closed"}}
_ABANDON_WRITE_TIMEOUT = 2.0


class _Waiter:
    """A request in flight. What the server sends for it - progress notes, then its outcome - is handed to the
    caller's own task in the order it came (a progress note never arrives after the answer it preceded, nor
    costs a task); `future` (a plain asyncio future: the gateway runs on asyncio) resolves when there is news.
    `timer`: the event loop's timer keeping the request's deadline."""

    __slots__ = ("future", "outcome", "notes", "on_progress", "timer")

    def __init__(self, future: asyncio.Future[None], on_progress: Any) -> None:
        self.future = future
        self.outcome: dict[str, Any] | None = None
        self.notes: list[tuple[Any, Any, Any]] = []
        self.on_progress = on_progress
        self.timer: asyncio.TimerHandle | None = None

    def settle(self, outcome: dict[str, Any]) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self._wake()

    def note(self, progress: tuple[Any, Any, Any]) -> None:
        if self.outcome is None:
            self.notes.append(progress)
            self._wake()

    def _wake(self) -> None:
        if not self.future.done():
            self.future.set_result(None)

    async def outcome_of(self) -> dict[str, Any]:
        """The request's outcome, once every progress note before it has been handed to `on_progress`."""
        while self.outcome is None or self.notes:
            if self.notes:
                notes, self.notes = self.notes, []
                for progress in notes:
                    try:
                        await self.on_progress(*progress)
                    except Exception:  # noqa: BLE001 - a failing progress callback must not fail the call
                        logger.exception("stdio upstream: progress callback raised")
                continue
            if self.future.done():
                self.future = self.future.get_loop().create_future()
            await self.future
        return self.outcome


_TIMED_OUT: dict[str, Any] = {}  # the outcome of a request whose deadline passed (compared by identity)


def _expire(waiter: _Waiter, deadline: Deadline) -> None:
    """The deadline's timer: the request times out, unless progress has moved its deadline on since."""
    if waiter.outcome is not None:
        return
    loop = waiter.future.get_loop()
    if loop.time() < deadline.at:
        waiter.timer = loop.call_at(deadline.at, _expire, waiter, deadline)
    else:
        waiter.settle(_TIMED_OUT)


class StdioRpc:
    def __init__(self, inbox: Inbox, pipe: Pipe) -> None:
        self._inbox = inbox
        self._pipe = pipe
        self._pending: dict[Any, _Waiter] = {}
        self._next_id = 0
        self._closed = False
        self._tasks: anyio.abc.TaskGroup | None = None

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Read messages until the connection ends; then every request in flight fails with CONNECTION_CLOSED."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            task_status.started()
            try:
                # Answers settle their waiters as the transport reads them (gateway.upstreams.stdio_transport.Inbox).
                self._inbox.attach(lambda item: self._dispatch(item, on_request, on_notify))
                await self._inbox.closed.wait()
            finally:
                self._inbox.attach(None)
                self._closed = True
                for waiter in list(self._pending.values()):
                    waiter.settle(_CLOSED)
                tasks.cancel_scope.cancel()  # handlers of the server's own requests end with the connection

    def _dispatch(self, item: dict[str, Any], on_request: OnRequest, on_notify: OnNotify) -> None:
        assert self._tasks is not None
        method = item.get("method")
        if method is None:  # a response (to an id we sent as an int; some servers echo it as a string)
            response_id = item.get("id")
            if isinstance(response_id, str) and response_id.isdigit():
                response_id = int(response_id)
            waiter = self._pending.get(response_id)
            if waiter is not None:
                waiter.settle(item)
            return
        params = item.get("params")
        if "id" in item:
            self._tasks.start_soon(self._answer, on_request, item["id"], method, params)
        elif method == "notifications/progress" and isinstance(params, dict):
            waiter = self._pending.get(params.get("progressToken"))
            if waiter is not None and waiter.on_progress is not None:
                waiter.note((params.get("progress"), params.get("total"), params.get("message")))
        elif method != "notifications/cancelled":
            self._tasks.start_soon(_quietly, on_notify(None, method, params))

    async def _answer(self, on_request: OnRequest, request_id: Any, method: str, params: Any) -> None:
        try:
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": await on_request(None, method, params),
            }
        except MCPError as exc:
            reply = {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": exc.error.model_dump(by_alias=True, mode="json", exclude_none=True),
            }
        except Exception as exc:  # noqa: BLE001 - a failing relay answers the server, it does not end the connection
            reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": str(exc)}}
        try:
            await self._pipe.send(reply)
        except OSError:
            pass

    async def send_raw_request(self, method: str, params: Any, opts: dict[str, Any] | None = None) -> dict[str, Any]:
        """The result of a request; `opts`: `on_progress`, `deadline` (gateway.runtime.deadlines: TimeoutError once it
        passes), `cancel_on_abandon` (default True: tell the server when the caller gives up)."""
        if self._closed:
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        opts = opts or {}
        self._next_id += 1
        request_id = self._next_id
        out = dict(params) if params else {}
        on_progress = opts.get("on_progress")
        if on_progress is not None:  # the request id doubles as the progress token
            out["_meta"] = {**(out.get("_meta") or {}), "progressToken": request_id}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if out:
            message["params"] = out
        deadline: Deadline | None = opts.get("deadline")
        loop = asyncio.get_running_loop()
        waiter = self._pending[request_id] = _Waiter(loop.create_future(), on_progress)
        abandon = opts.get("cancel_on_abandon", True)
        try:
            try:
                if not self._pipe.write(message):  # the server is not reading as fast: wait, within the deadline
                    with anyio.CancelScope(deadline=math.inf if deadline is None else deadline.at) as scope:
                        await self._pipe.drain()
                    if scope.cancelled_caught:
                        waiter.settle(_TIMED_OUT)
            except OSError:
                raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None
            if deadline is not None and math.isfinite(deadline.at) and waiter.outcome is None:
                waiter.timer = loop.call_at(deadline.at, _expire, waiter, deadline)
            outcome = await waiter.outcome_of()
        except anyio.get_cancelled_exc_class():
            if abandon:
                await self._abandon(request_id, "caller cancelled")
            raise
        finally:
            self._pending.pop(request_id, None)
            if waiter.timer is not None:
                waiter.timer.cancel()
        if outcome is _TIMED_OUT:
            if abandon:
                await self._abandon(request_id, "timed out")
            raise TimeoutError(f"no answer to {method} by its deadline")
        error = outcome.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise MCPError(code=INTERNAL_ERROR, message=f"malformed error response to {method}")
            raise MCPError(
                code=error.get("code", INTERNAL_ERROR), message=error.get("message", ""), data=error.get("data")
            )
        result = outcome.get("result")
        if not isinstance(result, dict):
            raise MCPError(code=INTERNAL_ERROR, message=f"malformed response to {method}: result is not an object")
        return result

    async def _abandon(self, request_id: int, reason: str) -> None:
        """Tell the server a request is given up (a courtesy: bounded, and not itself cancellable)."""
        if self._closed:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_ABANDON_WRITE_TIMEOUT):
            try:
                await self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
            except MCPError:
                pass

    async def notify(self, method: str, params: Any, opts: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._pipe.send(message)
        except OSError:
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None


async def _quietly(awaitable: Awaitable[None]) -> None:
    try:
        await awaitable
    except Exception:  # noqa: BLE001 - a failing callback must not end the connection
        logger.exception("stdio upstream: callback raised")
