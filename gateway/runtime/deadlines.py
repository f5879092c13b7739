"""A live call's time limit, kept by whatever waits for its answer.

A call may wait `timeout` seconds of silence, each progress notification extending it (`extend`), never past
its hard limit (gateway.upstreams.live decides both). The stdio client (gateway.upstreams.stdio_rpc) keeps the deadline with one
timer on the event loop: an anyio cancel scope around every call was a tenth of a live call's CPU in the
gateway, measured (bench/bench_cpu_per_call.py). The SDK's dispatcher, for HTTP and SSE upstreams, keeps it in
a cancel scope (`Scoped`). Either way a call past its deadline raises TimeoutError, once the server has been
told the call is abandoned.
"""

from __future__ import annotations

from typing import Any

import anyio


class Deadline:
    """When a call stops waiting, in the event loop's clock (`anyio.current_time()`)."""

    __slots__ = ("at", "scope")

    def __init__(self, at: float) -> None:
        self.at = at
        self.scope: Any = None  # the cancel scope keeping it, when one does (`Scoped`)

    def extend(self, at: float) -> None:
        self.at = at
        if self.scope is not None:
            self.scope.deadline = at


class Scoped:
    """The SDK's `JSONRPCDispatcher`, with a request's `deadline` option kept in a cancel scope."""

    def __init__(self, dispatcher: Any) -> None:
        self.dispatcher = dispatcher

    async def run(self, *args: Any, **kwargs: Any) -> None:
        await self.dispatcher.run(*args, **kwargs)

    async def notify(self, method: str, params: Any, opts: Any = None) -> None:
        await self.dispatcher.notify(method, params, opts)

    async def send_raw_request(self, method: str, params: Any, opts: dict[str, Any] | None = None) -> dict[str, Any]:
        opts = dict(opts or {})
        deadline: Deadline | None = opts.pop("deadline", None)
        result: dict[str, Any]
        if deadline is None:
            result = await self.dispatcher.send_raw_request(method, params, opts)
            return result
        with anyio.CancelScope(deadline=deadline.at) as scope:
            deadline.scope = scope
            try:
                result = await self.dispatcher.send_raw_request(method, params, opts)
                return result
            finally:
                deadline.scope = None
        raise TimeoutError(f"no answer to {method} by its deadline")
