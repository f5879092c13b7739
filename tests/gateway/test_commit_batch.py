"""Calls answered in one event-loop turn share one call-log commit, and no answer leaves before its record.

The batch itself (gateway.http.commit_batch) with a stand-in store; a real CassetteStore holding appends for a
batch; and a gateway served in this process (uvicorn, the hot lane, a call log in LMDB) taking eight calls
that arrive in one turn, its answer writes checked against what the log holds at the moment each is written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import threading

import anyio
import pytest
from uvicorn.logging import AccessFormatter

from mcpgw.cassette.store import CassetteStore
from mcpgw.gateway.endpoints.http_app import serve_http
from mcpgw.gateway.http import commit_batch
from mcpgw.gateway.http.commit_batch import Batch, collecting_batch
from mcpgw.gateway.http.hot_protocol import HotLaneProtocol
from mcpgw.gateway.mcp_server import build_http_app, build_server
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import HandlerUpstream
from mcpgw.lock.config import ServerSpec
from mcpgw.recorder.calllog import CallLog
from tests.gateway.test_write_coalescing import post


class Holder:
    def __init__(self, events: list[str], name: str) -> None:
        self.events, self.name = events, name

    def commit_held(self) -> None:
        self.events.append(f"commit {self.name}")


def test_answers_wait_for_the_turns_commit_and_leave_in_order():
    events: list[str] = []

    async def main():
        loop = asyncio.get_running_loop()
        batch = Batch()
        batch.after(events.append, "answer before anything is held")  # nothing held: written at once
        assert events == ["answer before anything is held"]
        batch.collect(loop)
        assert collecting_batch() is batch
        seen_elsewhere = []
        thread = threading.Thread(target=lambda: seen_elsewhere.append(collecting_batch()))
        thread.start()
        thread.join()
        assert seen_elsewhere == [None]  # another thread's appends are not held for this loop's batch
        batch.hold(Holder(events, "a"))
        batch.hold(Holder(events, "b"))
        batch.stop()
        assert collecting_batch() is None
        batch.after(events.append, "first answer")

        def broken():
            raise RuntimeError("a connection's write failed")

        batch.after(broken)
        batch.after(events.append, "second answer")
        assert events == ["answer before anything is held"]  # held until the turn ends
        await asyncio.sleep(0)
        assert events == ["answer before anything is held"]  # the turn brought answers: one more turn for others
        await asyncio.sleep(0)
        assert events == ["answer before anything is held", "commit a", "commit b", "first answer", "second answer"]
        batch.after(events.append, "after the commit")  # a new turn: nothing held again
        assert events[-1] == "after the commit"

    asyncio.run(main())


def test_a_tasks_batch_holds_its_appends_there_only():
    async def main():
        loop = asyncio.get_running_loop()
        batch = Batch()

        async def seen() -> object:
            return collecting_batch()

        async def call() -> tuple[object, object, object]:
            batch.collect_in_task(loop)
            inner = await asyncio.create_task(seen())  # a task it starts: its appends held too
            return await seen(), inner, await asyncio.to_thread(collecting_batch)

        in_task, in_its_task, in_a_thread = await asyncio.create_task(call())
        assert in_task is batch and in_its_task is batch
        assert in_a_thread is None  # the context copied into a thread: not the loop's, so not held
        assert collecting_batch() is None  # another task (this one): as usual

    asyncio.run(main())


def test_a_batch_waits_for_more_calls_only_while_turns_bring_them_and_only_so_long():
    events: list[str] = []

    async def main():
        loop = asyncio.get_running_loop()
        batch = Batch()
        batch.collect(loop)
        batch.hold(Holder(events, "log"))
        batch.stop()
        for turn in range(commit_batch.EXTRA_TURNS + 3):  # a call answered in every turn, without end
            if "commit log" in events:
                break
            batch.after(events.append, f"answer {turn}")
            await asyncio.sleep(0)
        # It waited EXTRA_TURNS turns, each of which brought a call, then committed what it held.
        assert events == ["commit log"] + [f"answer {turn}" for turn in range(commit_batch.EXTRA_TURNS + 1)]
        events.clear()
        batch.collect(loop)
        batch.hold(Holder(events, "log"))
        batch.stop()
        for number in range(commit_batch.HELD_ANSWERS):  # enough answers held: no turn waited for more
            batch.after(events.append, number)
        await asyncio.sleep(0)
        assert events == ["commit log", *range(commit_batch.HELD_ANSWERS)]

    asyncio.run(main())


def test_a_store_holds_a_batchs_appends_until_the_turn_ends_and_commits_them_at_once(tmp_path):
    store = CassetteStore(tmp_path / "log")

    async def main():
        batch = Batch()
        batch.collect(asyncio.get_running_loop())
        try:
            for number in range(3):
                store.append("calls", {"seq": None, "n": number})
        finally:
            batch.stop()
        assert store.count("calls") == 0 and store.commits == 0  # held, not committed
        await asyncio.sleep(0)
        assert store.count("calls") == 3 and store.commits == 1  # one transaction for the three
        batch.collect(asyncio.get_running_loop())
        try:
            store.append("calls", {"seq": None, "n": 3})
        finally:
            batch.stop()
        store.append(
            "calls", {"seq": None, "n": 4}
        )  # not held, handed in after the held one: committed with it, after it
        assert store.count("calls") == 5
        batch.collect(asyncio.get_running_loop())
        try:
            store.append("calls", {"seq": None, "n": 5})
        finally:
            batch.stop()

    asyncio.run(main())  # the loop ends before its turn does: the store's close still writes what it held
    store.close()
    reopened = CassetteStore(tmp_path / "log", create=False, readonly=True)
    try:
        records = [record for _, record in reopened.items("calls")]
    finally:
        reopened.env.close()
    assert [(r["seq"], r["n"]) for r in records] == [(i + 1, i) for i in range(6)]


class AtOnce(HandlerUpstream):
    answers_at_once = True  # answers without waiting, as a replay does (gateway.upstreams.upstream.AnswersAtOnce)


async def _add(method, params):
    return {"content": [{"type": "text", "text": str(sum(params["arguments"].values()))}]}


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    size = int(re.search(rb"content-length: (\d+)", head).group(1))
    while len(body) < size:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


class _Formatted(logging.Handler):
    """Each record as the handler's formatter writes it, or the formatter's error."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception as exc:  # noqa: BLE001 - what the test reports
            self.lines.append(f"cannot be formatted: {exc!r}")


async def _add_later(method, params):
    await asyncio.sleep(0)  # waits, as a live server's answer does: the call is answered from a task
    return await _add(method, params)


@pytest.mark.parametrize("at_once", [True, False], ids=["answered at once", "answered from tasks"])
def test_calls_arriving_in_one_turn_share_a_commit_and_each_answer_follows_its_record(tmp_path, monkeypatch, at_once):
    # The hot lane writes uvicorn's access log line for its answers, as uvicorn's access formatter reads it, when
    # that log writes INFO (the gateway sets it to WARNING on start; a user's logging config may not): set to INFO,
    # and the handler added, once the server has started, below.
    access = logging.getLogger("uvicorn.access")
    written_log = _Formatted(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False))
    monkeypatch.setattr(access, "level", access.level)  # restored after the test
    catalog = ServerCatalog(
        {"capabilities": {"tools": {}}, "serverInfo": {"name": "adder", "version": "1"}},
        tools=[{"name": "add", "inputSchema": {"type": "object"}}],
    )
    store = CassetteStore(tmp_path / "log")
    upstream = AtOnce("alpha", _add, catalog) if at_once else HandlerUpstream("alpha", _add_later, catalog)
    router = Router(
        [ServerSpec("alpha", "stdio", "x")],
        {"alpha": upstream},
        Settings(validate="enforce", naming="prefix"),
        CallLog(store),
    )
    app = build_http_app(router, build_server(router), "127.0.0.1", response_mode="json")
    assert app.hot_lane is not None

    # Each hot answer, as it is written: how many records the log holds then, read in a transaction of its own.
    written: list[tuple[int, int]] = []
    send = HotLaneProtocol._send

    def checked_send(self, cycle, status, block, has_connection, body):
        with store.env.begin() as txn:
            written.append((len(written) + 1, txn.stat(store.dbs["calls"])["entries"]))
        send(self, cycle, status, block, has_connection, body)

    monkeypatch.setattr(HotLaneProtocol, "_send", checked_send)
    clients = 8
    port: list[int] = []
    results: dict[str, object] = {}

    def client() -> None:  # in a thread of its own: the gateway's loop is this test's main thread
        try:
            host = f"127.0.0.1:{port[0]}"
            access.setLevel(logging.INFO)  # after uvicorn's logging config, which replaces the logger's handlers
            access.addHandler(written_log)
            socks, sessions = [], []
            for _ in range(clients):
                sock = socket.create_connection(("127.0.0.1", port[0]), timeout=20)
                sock.sendall(
                    post(
                        host,
                        "/mcp",
                        {
                            "jsonrpc": "2.0",
                            "id": 0,
                            "method": "initialize",
                            "params": {
                                "protocolVersion": "2025-11-25",
                                "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"},
                            },
                        },
                    )
                )
                session = re.search(rb"mcp-session-id: (\S+)", _answer(sock)).group(1).decode()
                sock.sendall(post(host, "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session))
                assert _answer(sock).startswith(b"HTTP/1.1 202")
                socks.append(sock)
                sessions.append(session)
            for round_ in range(3):
                commits = store.commits
                held, sent = threading.Event(), threading.Event()

                def hold_loop() -> None:  # the loop kept busy until every request has arrived: one turn reads them
                    held.set()
                    sent.wait(10)

                loop.call_soon_threadsafe(hold_loop)
                assert held.wait(10)
                for number, (sock, session) in enumerate(zip(socks, sessions)):
                    sock.sendall(
                        post(
                            host,
                            "/mcp",
                            {
                                "jsonrpc": "2.0",
                                "id": 1 + round_,
                                "method": "tools/call",
                                "params": {"name": "alpha__add", "arguments": {"a": number, "b": round_}},
                            },
                            session,
                        )
                    )
                sent.set()
                answers = [_answer(sock) for sock in socks]
                results.setdefault("commits", []).append(store.commits - commits)
                results.setdefault("answers", []).extend(answers)
            for sock in socks:
                sock.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            results["error"] = exc
        finally:
            loop.call_soon_threadsafe(stop.set)

    async def main():
        nonlocal loop, stop
        loop, stop = asyncio.get_running_loop(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_http, app, "127.0.0.1", 0, port.append)
            while not port:
                await anyio.sleep(0.01)
            thread = threading.Thread(target=client)
            thread.start()
            with anyio.fail_after(60):
                await stop.wait()
            tg.cancel_scope.cancel()
        thread.join(5)

    loop = stop = None
    anyio.run(main)
    store.close()
    assert "error" not in results, results.get("error")
    answers = results["answers"]
    assert len(answers) == 3 * clients and all(a.startswith(b"HTTP/1.1 200") for a in answers)
    assert [json.loads(a.partition(b"\r\n\r\n")[2])["result"]["content"][0]["text"] for a in answers[:clients]] == [
        str(number) for number in range(clients)
    ]
    # Every call answered in the turn that read it, or every one from a task (the calls that end in one turn).
    assert app.hot_lane.started_at_once == (3 * clients if at_once else 0)
    assert app.hot_lane.served == 3 * clients
    assert max(results["commits"]) < clients and sum(results["commits"]) <= 3 * 2, results["commits"]  # shared
    # No answer was written before the record of its call was committed.
    assert len(written) == 3 * clients and all(held >= number for number, held in written), written
    assert commit_batch.collecting_batch() is None
    access.removeHandler(written_log)
    assert not [line for line in written_log.lines if line.startswith("cannot be formatted")], written_log.lines[-3:]
    answered = [line for line in written_log.lines if line.endswith('"POST /mcp HTTP/1.1" 200 OK')]
    assert len(answered) >= 3 * clients, written_log.lines[-3:]  # the hot answers (and the handshakes' POSTs)
