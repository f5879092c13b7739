"""The lean stdio JSON-RPC client's contracts, against a scripted peer (its inbox, as the stdio transport fills it)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from mcpgw.gateway.runtime.deadlines import Deadline, Scoped
from mcpgw.gateway.upstreams.stdio_rpc import StdioRpc
from mcpgw.gateway.upstreams.stdio_transport import Inbox


class ToClient:
    """What the server sends, as the transport hands it over: into the client's inbox, then a checkpoint."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    async def send(self, message: dict) -> None:
        self.inbox.put(message)
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.inbox.close()


class Peer:
    """The server side: sees what the client writes, answers as the test says."""

    def __init__(self) -> None:
        self.read = Inbox()
        self.to_client = ToClient(self.read)
        self.written: list[dict] = []
        self.arrived = anyio.Event()

    # The server's stdin, as gateway.upstreams.stdio_transport.Pipe: never full here.
    def write(self, message: dict) -> bool:
        self.written.append(message)
        self.arrived.set()
        return True

    async def drain(self) -> None:
        pass

    async def send(self, message: dict) -> None:
        self.write(message)

    async def next_written(self) -> dict:
        while not self.written:
            self.arrived = anyio.Event()
            await self.arrived.wait()
        return self.written.pop(0)


async def start(peer: Peer, tg, on_request=None, notes=None):
    async def on_notify(_, method, params):
        notes.append((method, params))

    async def default_request(_, method, params):
        return {"echo": method}

    rpc = StdioRpc(peer.read, peer)
    await tg.start(lambda *, task_status: rpc.run(on_request or default_request, on_notify, task_status=task_status))
    return rpc


def run(fn):
    async def bounded():
        with anyio.fail_after(10):
            await fn()

    anyio.run(bounded)


def test_results_errors_progress_and_string_ids():
    async def go():
        peer, notes, progress = Peer(), [], []
        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, notes=notes)

            async def on_progress(p, total, message):
                progress.append((p, total, message))

            async def server():
                call = await peer.next_written()
                assert call["params"]["_meta"] == {"trace": 1, "progressToken": call["id"]}
                await peer.to_client.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": call["id"], "progress": 1, "total": 2},
                    }
                )
                await peer.to_client.send(
                    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
                )
                await peer.to_client.send({"jsonrpc": "2.0", "id": str(call["id"]), "result": {"content": []}})
                failing = await peer.next_written()
                await peer.to_client.send(
                    {
                        "jsonrpc": "2.0",
                        "id": failing["id"],
                        "error": {"code": -32602, "message": "bad", "data": {"x": 1}},
                    }
                )
                odd = await peer.next_written()
                await peer.to_client.send({"jsonrpc": "2.0", "id": odd["id"], "result": [1]})

            tg.start_soon(server)
            result = await rpc.send_raw_request(
                "tools/call", {"name": "t", "_meta": {"trace": 1}}, {"on_progress": on_progress}
            )
            assert result == {"content": []}
            with pytest.raises(MCPError) as error:
                await rpc.send_raw_request("tools/call", {"name": "u"})
            assert (error.value.code, error.value.message, error.value.data) == (-32602, "bad", {"x": 1})
            with pytest.raises(MCPError, match="result is not an object"):
                await rpc.send_raw_request("ping", None)
            await anyio.wait_all_tasks_blocked()
            assert progress == [(1, 2, None)]
            assert notes == [("notifications/message", {"level": "info"})]
            tg.cancel_scope.cancel()

    run(go)


def test_server_requests_are_answered_and_abandoned_calls_cancelled():
    async def go():
        peer = Peer()

        async def on_request(_, method, params):
            if method == "roots/list":
                return {"roots": []}
            raise MCPError(code=-32601, message="no")

        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, on_request=on_request, notes=[])
            await peer.to_client.send({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
            assert await peer.next_written() == {"jsonrpc": "2.0", "id": "s1", "result": {"roots": []}}
            await peer.to_client.send({"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": {}})
            assert (await peer.next_written())["error"]["code"] == -32601
            with anyio.move_on_after(0.2):
                await rpc.send_raw_request("tools/call", {"name": "slow"})
            call = await peer.next_written()
            cancel = await peer.next_written()
            assert cancel == {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": call["id"], "reason": "caller cancelled"},
            }
            tg.cancel_scope.cancel()

    run(go)


def test_a_closed_connection_fails_requests_in_flight():
    async def go():
        peer = Peer()
        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, notes=[])

            async def close_soon():
                await peer.next_written()
                await peer.to_client.aclose()

            tg.start_soon(close_soon)
            with pytest.raises(MCPError) as error:
                await rpc.send_raw_request("tools/call", {"name": "t"})
            assert error.value.code == CONNECTION_CLOSED
            with pytest.raises(MCPError):
                await rpc.send_raw_request("ping", None)

    run(go)


def test_a_request_past_its_deadline_times_out_and_the_server_is_told():
    async def go():
        peer = Peer()
        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, notes=[])
            began = anyio.current_time()
            with pytest.raises(TimeoutError):
                await rpc.send_raw_request("tools/call", {"name": "slow"}, {"deadline": Deadline(began + 0.2)})
            assert 0.2 <= anyio.current_time() - began < 2
            call, cancel = await peer.next_written(), await peer.next_written()
            assert cancel == {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": call["id"], "reason": "timed out"},
            }
            await peer.to_client.send({"jsonrpc": "2.0", "id": call["id"], "result": {}})  # late: dropped

            async def answer_next():
                ping = await peer.next_written()
                await peer.to_client.send({"jsonrpc": "2.0", "id": ping["id"], "result": {"pong": 1}})

            tg.start_soon(answer_next)  # the connection goes on
            assert await rpc.send_raw_request("ping", None, {"deadline": Deadline(anyio.current_time() + 5)}) == {
                "pong": 1
            }
            tg.cancel_scope.cancel()

    run(go)


def test_progress_moves_a_deadline_on_and_the_answer_still_counts():
    """The answer comes after the first deadline has passed, yet counts: each progress note moved the deadline on.
    Event-driven: the server goes on only once its note was handled, and each move is generous (30 s), so a busy
    machine cannot fail it; without the extension the request would time out at the first deadline."""

    async def go():
        peer = Peer()
        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, notes=[])
            first = anyio.current_time() + 0.3
            deadline = Deadline(first)
            handled: list[anyio.Event] = [anyio.Event() for _ in range(3)]

            async def on_progress(progress, total, message):
                deadline.extend(anyio.current_time() + 30)
                handled[int(progress)].set()

            async def server():
                call = await peer.next_written()
                for step in range(3):
                    await peer.to_client.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {"progressToken": call["id"], "progress": step},
                        }
                    )
                    await handled[step].wait()
                await anyio.sleep(max(0.0, first - anyio.current_time()) + 0.2)  # past the first deadline
                await peer.to_client.send({"jsonrpc": "2.0", "id": call["id"], "result": {"done": True}})

            tg.start_soon(server)
            result = await rpc.send_raw_request(
                "tools/call", {"name": "long"}, {"deadline": deadline, "on_progress": on_progress}
            )
            assert result == {"done": True} and anyio.current_time() > first
            tg.cancel_scope.cancel()

    run(go)


def test_a_write_to_a_full_pipe_waits_no_longer_than_the_deadline():
    async def go():
        peer = Peer()
        peer.write = lambda message: (peer.written.append(message), False)[1]  # the pipe is full from now on
        never = anyio.Event()

        async def drain() -> None:
            await never.wait()  # the server never reads its stdin

        peer.drain = drain
        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, notes=[])
            began = anyio.current_time()
            with pytest.raises(TimeoutError):
                await rpc.send_raw_request(
                    "tools/call", {"name": "t"}, {"deadline": Deadline(began + 0.2), "cancel_on_abandon": False}
                )
            assert anyio.current_time() - began < 2
            tg.cancel_scope.cancel()

    run(go)


def test_the_sdk_dispatcher_keeps_a_deadline_in_a_cancel_scope_that_progress_moves():
    class Slow:
        async def send_raw_request(self, method, params, opts):
            assert "deadline" not in opts  # kept by the wrapper, not passed on
            await anyio.sleep(0.4)
            return {"late": True}

    async def go():
        scoped = Scoped(Slow())
        with pytest.raises(TimeoutError):
            await scoped.send_raw_request("tools/call", {}, {"deadline": Deadline(anyio.current_time() + 0.1)})
        deadline = Deadline(anyio.current_time() + 0.1)

        async def extend_soon():
            await anyio.sleep(0.05)
            deadline.extend(anyio.current_time() + 1)

        async with anyio.create_task_group() as tg:
            tg.start_soon(extend_soon)
            assert await scoped.send_raw_request("tools/call", {}, {"deadline": deadline}) == {"late": True}

    run(go)


def test_progress_read_with_its_answer_is_handed_over_before_the_answer():
    """A server writes its last progress notes and its answer at once (server-everything does): the caller has
    every note, in order, by the time it has the answer, however slow its progress callback."""

    async def go():
        peer, seen = Peer(), []

        async def on_progress(progress, total, message):
            await anyio.sleep(0.05)  # e.g. a note relayed to a slow client
            seen.append(progress)

        async def server():
            call = await peer.next_written()
            for step in (1, 2, 3):  # one read: no checkpoint between these
                peer.read.put(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": call["id"], "progress": step, "total": 3},
                    }
                )
            peer.read.put({"jsonrpc": "2.0", "id": call["id"], "result": {"content": []}})

        async with anyio.create_task_group() as tg:
            rpc = await start(peer, tg, notes=[])
            tg.start_soon(server)
            assert await rpc.send_raw_request("tools/call", {"name": "t"}, {"on_progress": on_progress}) == {
                "content": []
            }
            assert seen == [1, 2, 3]
            tg.cancel_scope.cancel()

    run(go)


def test_an_inbox_holds_a_bounded_number_of_early_messages_and_none_once_its_consumer_left(caplog):
    """Messages read before the consumer attaches are held for it, in order, up to Inbox.MAX_EARLY (the rest dropped,
    with one warning); once the consumer has left (attach(None)) nothing more is held."""
    inbox = Inbox()
    for number in range(Inbox.MAX_EARLY + 5):
        inbox.put({"n": number})
    assert inbox.dropped == 5
    assert sum("dropping the rest" in r.getMessage() for r in caplog.records) == 1
    seen = []
    inbox.attach(seen.append)
    assert seen == [{"n": n} for n in range(Inbox.MAX_EARLY)]
    inbox.put({"n": "late"})
    assert seen[-1] == {"n": "late"}
    inbox.attach(None)  # the consumer is gone
    for number in range(3 * Inbox.MAX_EARLY):
        inbox.put({"n": number})
    inbox.attach(seen.append)  # a consumer again: nothing was held for it meanwhile
    assert len(seen) == Inbox.MAX_EARLY + 1
