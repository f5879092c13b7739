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

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR

from gateway.stdio_transport import Inbox

logger = logging.getLogger(__name__)

OnRequest = Callable[[Any, str, Any], Awaitable[dict[str, Any]]]
OnNotify = Callable[[Any, str, Any], Awaitable[None]]
_CLOSED = {"error": {"code": CONNECTION_CLOSED, "message": "Connection closed"}}
_ABANDON_WRITE_TIMEOUT = 2.0


class _Waiter:
    __slots__ = ("done", "outcome", "on_progress")

    def __init__(self, on_progress: Any) -> None:
        self.done = anyio.Event()
        self.outcome: dict[str, Any] | None = None
        self.on_progress = on_progress

    def settle(self, outcome: dict[str, Any]) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


class StdioRpc:
    def __init__(self, inbox: Inbox, write: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self._inbox = inbox
        self._write = write
        self._pending: dict[Any, _Waiter] = {}
        self._next_id = 0
        self._closed = False
        self._tasks: anyio.abc.TaskGroup | None = None

    async def run(self, on_request: OnRequest, on_notify: OnNotify, *,
                  task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read messages until the connection ends; then every request in flight fails with CONNECTION_CLOSED."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            task_status.started()
            try:
                # Answers settle their waiters as the transport reads them (gateway.stdio_transport.Inbox).
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
                self._tasks.start_soon(_quietly, waiter.on_progress(params.get("progress"), params.get("total"), params.get("message")))
        elif method != "notifications/cancelled":
            self._tasks.start_soon(_quietly, on_notify(None, method, params))

    async def _answer(self, on_request: OnRequest, request_id: Any, method: str, params: Any) -> None:
        try:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": await on_request(None, method, params)}
        except MCPError as exc:
            reply = {"jsonrpc": "2.0", "id": request_id,
                     "error": exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)}
        except Exception as exc:  # noqa: BLE001 - a failing relay answers the server, it does not end the connection
            reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": str(exc)}}
        try:
            await self._write(reply)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def send_raw_request(self, method: str, params: Any, opts: dict[str, Any] | None = None) -> dict[str, Any]:
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
        waiter = self._pending[request_id] = _Waiter(on_progress)
        written = False
        try:
            try:
                written = True
                await self._write(message)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None
            await waiter.done.wait()
        except anyio.get_cancelled_exc_class():
            if written and opts.get("cancel_on_abandon", True) and not self._closed:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_ABANDON_WRITE_TIMEOUT):
                    await self.notify("notifications/cancelled", {"requestId": request_id, "reason": "caller cancelled"})
            raise
        finally:
            self._pending.pop(request_id, None)
        outcome = waiter.outcome or _CLOSED
        error = outcome.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise MCPError(code=INTERNAL_ERROR, message=f"malformed error response to {method}")
            raise MCPError(code=error.get("code", INTERNAL_ERROR), message=error.get("message", ""), data=error.get("data"))
        result = outcome.get("result")
        if not isinstance(result, dict):
            raise MCPError(code=INTERNAL_ERROR, message=f"malformed response to {method}: result is not an object")
        return result

    async def notify(self, method: str, params: Any, opts: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._write(message)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None


async def _quietly(awaitable: Awaitable[None]) -> None:
    try:
        await awaitable
    except Exception:  # noqa: BLE001 - a failing callback must not end the connection
        logger.exception("stdio upstream: callback raised")
