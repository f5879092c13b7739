"""gateway.runtime.eager: a coroutine run at once returns its value without a task; one that suspends goes on in a task
from where it stopped (a future, a bare yield), cancellable there; context variables stay per call."""

import asyncio
import contextvars
import types

import anyio
import pytest

from mcpgw.gateway.endpoints.fast_path import cancelled
from mcpgw.gateway.endpoints.hot_lane import HotLane
from mcpgw.gateway.runtime import eager

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


async def plain(value: str) -> str:
    MARK.set(value)  # a call's variable: must not be seen by the next call
    return value


async def raising() -> str:
    raise ValueError("bad")


def test_a_call_that_does_not_wait_is_done_at_once_with_its_own_context():
    async def main() -> None:
        first = eager.start(plain("a"))
        assert isinstance(first, eager.Done) and first.value == "a"
        assert MARK.get() == "unset"  # set inside the call's own copy of the context
        second = eager.start(plain("b"))
        assert isinstance(second, eager.Done) and second.value == "b"
        with pytest.raises(ValueError, match="bad"):
            eager.start(raising())

    asyncio.run(main())


def test_a_call_that_suspends_goes_on_in_a_task_from_where_it_stopped():
    steps: list[str] = []

    async def waits(gate: asyncio.Future) -> str:
        MARK.set("mine")
        steps.append("before")
        await asyncio.sleep(0)  # a bare yield
        got = await gate  # a future
        steps.append("after")
        return f"{got} {MARK.get()}"

    async def main() -> str:
        gate = asyncio.get_running_loop().create_future()
        step = eager.start(waits(gate))
        assert isinstance(step, eager.Later) and steps == ["before"]

        async def rest() -> str:
            return await step

        task = asyncio.get_running_loop().create_task(rest(), context=step.context)
        await asyncio.sleep(0.01)
        assert not task.done()
        gate.set_result("opened")
        return await task

    assert asyncio.run(main()) == "opened mine"
    assert steps == ["before", "after"]


def test_a_suspended_call_is_cancelled_through_its_task_and_cleans_up():
    cleaned: list[str] = []

    async def waits_forever() -> str:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            cleaned.append("finally")
        return "never"

    async def main() -> bool:
        step = eager.start(waits_forever())
        assert isinstance(step, eager.Later)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await step
        return scope.cancelled_caught

    assert asyncio.run(main()) is True
    assert cleaned == ["finally"]


class _Entry:
    cancel = None


class _Call:
    request_id = 7
    session_id = "s"


class _Ready:
    call = _Call()
    entry = _Entry()


class _Fast:
    served = 0


def test_the_hot_lane_files_a_cancel_scope_for_a_call_that_suspended_and_answers_its_cancellation():
    """A `notifications/cancelled` cancels what is filed in the id's entry: the rest of a call begun at once
    gets a scope there, and its cancellation is answered as the SDK answers one."""
    lane = HotLane.__new__(HotLane)
    lane.fast, lane.served = _Fast(), 0
    ready = _Ready()

    async def waits_forever() -> bytes:
        await asyncio.get_running_loop().create_future()
        return b"never"

    async def main() -> bytes:
        step = eager.start(waits_forever())
        assert isinstance(step, eager.Later)
        task = asyncio.get_running_loop().create_task(lane.finish(ready, step), context=step.context)
        await asyncio.sleep(0.01)
        assert ready.entry.cancel is not None  # filed: the id table can cancel it
        ready.entry.cancel.cancel()
        return await task

    assert asyncio.run(main()) == cancelled(7)
    assert ready.entry.cancel is None and lane.served == 1


def test_a_call_begun_at_once_is_in_the_table_of_ids_in_flight_only_if_it_waits():
    """Answered within the turn, nothing can see its id in flight (nothing else runs): it is not filed. One that
    waits after all is filed before anything else runs, so a cancellation or a second request with its id finds it."""
    from mcpgw.gateway.endpoints.hot_lane import Ready
    from mcpgw.gateway.sessions.request_ids import InflightIds

    lane = HotLane.__new__(HotLane)
    lane.ids, lane.at_once, lane.started_at_once = InflightIds(None), lambda: True, 0
    gate: list[asyncio.Future] = []

    async def answer(ready, *, scoped):  # the lane's own `_answer`, reduced to its wait (or none)
        if gate:
            await gate[0]
        return b"answer"

    lane._answer = answer

    async def main() -> None:
        done = Ready(_Call(), None, None, {})
        step = lane.start(done)
        assert isinstance(step, eager.Done) and step.value == b"answer"
        assert done.entry is None and lane.ids.sessions == {}
        gate.append(asyncio.get_running_loop().create_future())
        waits = Ready(_Call(), None, _Transport(), {})
        step = lane.start(waits)
        assert isinstance(step, eager.Later)
        assert waits.entry is not None and lane.ids.sessions == {"s": {"7": waits.entry}}
        assert waits.transport.idle_scope.deadline == float("inf")  # its session's idle countdown waits with it
        step.coroutine.close()

    asyncio.run(main())


class _Transport:
    def __init__(self) -> None:
        self.idle_scope = types.SimpleNamespace(deadline=0.0)  # the SDK transport's idle countdown
