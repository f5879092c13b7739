"""`mcpgw serve --workers 2` on the embedded cassette answers exactly as one process does.

Every lane gets the recorded answers in recorded order, however its requests are spread over
the workers: tagged runs through SDK clients in both eras, concurrently; a handshake session
whose every request arrives on a fresh TCP connection (dealt to the workers in turn); an
untagged 2026-07-28 newcomer (its lane is its cookie identity). Connections are spread evenly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client

from mcpgw.cassette.cassette import Cassette, Recorded
from tests.conftest import ROOT, RunningGateway, free_port, pid_alive, stop_gateway
from tests.gateway.test_hot_lane_fuzz import dechunk
from tests.replay.test_default_cassette import (
    EMBEDDED,
    SEPARATOR,
    ask,
    dump,
    expected_answer,
    newcomer_requests,
    session_lane,
)

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def start_workers(home: Path) -> RunningGateway:
    """`mcpgw serve --workers 2` on a copy of the embedded cassette, no PATH (nothing can start), both workers serving."""
    (home / "cassettes" / "default").mkdir(parents=True)
    shutil.copy2(EMBEDDED / "data.mdb", home / "cassettes" / "default" / "data.mdb")
    port = free_port()
    env = {
        **os.environ,
        "PATH": "/nonexistent",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    log_path = home / "gateway.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpgw.cli", "serve", "--port", str(port), "--workers", "2"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=home,
            env=env,
            start_new_session=True,
        )
    gateway = RunningGateway(
        f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{port}", process, home / "cassettes", log_path
    )
    deadline = time.monotonic() + 90
    while gateway.log().count("no server process is started") < 2:  # both workers are serving
        if process.poll() is not None:
            raise AssertionError(f"gateway exited ({process.returncode}): {gateway.log()}")
        if time.monotonic() > deadline:
            stop_gateway(gateway)
            raise AssertionError(f"workers did not start within 90 s: {gateway.log()}")
        time.sleep(0.1)
    return gateway


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningGateway, Recorded, Path]]:
    home = tmp_path_factory.mktemp("workers")
    copy = Cassette(EMBEDDED, create=False, readonly=True)
    try:
        recorded = copy.load()
    finally:
        copy.close()
    gateway = start_workers(home)
    try:
        yield gateway, recorded, home
    finally:
        stop_gateway(gateway)
    assert gateway.process.returncode == 0, gateway.log()
    assert "Traceback" not in gateway.log()


def in_recorded_order(recorded: Recorded, chosen: list[dict[str, Any]], answers: list[Any]) -> None:
    taken: dict[str, int] = defaultdict(int)
    for entry, got in zip(chosen, answers, strict=True):
        expected = recorded.exchanges[entry["key"]]
        assert got == expected_answer(expected[min(taken[entry["key"]], len(expected) - 1)]), (
            entry["server"],
            entry["params"],
        )
        taken[entry["key"]] += 1


def test_tagged_runs_in_both_eras_answer_as_one_process(workers):
    gateway, recorded, home = workers
    chosen = session_lane(home)[:60]
    runs = [(f"run-{n}", era) for n in range(3) for era in ("legacy", "2026-07-28")]
    answers: dict[str, list[Any]] = {}

    async def one(run: str, era: str) -> None:
        async with Client(f"{gateway.url}?run={run}-{era}", mode=era) as client:
            answers[run + era] = [await ask(client, entry) for entry in chosen]

    async def go() -> None:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for run, era in runs:
                    tg.start_soon(one, run, era)

    anyio.run(go)
    for run, era in runs:
        in_recorded_order(recorded, chosen, answers[run + era])


def test_a_session_whose_requests_reach_any_worker(workers):
    gateway, recorded, home = workers
    chosen = [e for e in session_lane(home) if e["method"] == "tools/call"][:40]
    served_by, forwarded = set(), 0
    # No keep-alive: every request is a new connection, dealt to the workers in turn.
    with httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30) as client:
        init = client.post(
            gateway.url,
            headers=HEADERS,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "fresh", "version": "1"},
                },
            },
        )
        session = {**HEADERS, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        assert (
            client.post(
                gateway.url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
            ).status_code
            == 202
        )
        got = []
        for number, entry in enumerate(chosen, 1):
            name = f"{entry['server']}{SEPARATOR}{entry['params']['name']}"
            response = client.post(
                gateway.url,
                headers=session,
                content=json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": number,
                        "method": "tools/call",
                        "params": {"name": name, "arguments": entry["params"].get("arguments") or {}},
                    }
                ),
            )
            assert response.status_code == 200, response.text
            served_by.add(response.headers["x-mcpgw-worker"])
            forwarded += "x-mcpgw-forwarded-by" in response.headers
            body = response.json()
            got.append(
                {"code": body["error"]["code"], "message": body["error"]["message"]}
                if "error" in body
                else dump(types.CallToolResult.model_validate(body["result"]))
            )
    in_recorded_order(recorded, chosen, got)
    assert len(served_by) == 1  # the session's one worker answered everything ...
    assert forwarded > 0  # ... including requests that first reached the other one


def test_a_forwarded_request_that_expects_100_continue_gets_its_answer(workers):
    """curl sends `Expect: 100-continue` with bodies over 1 KB. The worker a connection reached says
    "100 Continue" itself, so the one that owns the session must not say it again: forwarded, that second
    interim answer was taken for the answer (status 100, the real one lost, the connection out of step)."""
    gateway, _, _ = workers
    with httpx.Client(timeout=30) as client:
        init = client.post(
            gateway.url,
            headers=HEADERS,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "curl-like", "version": "1"},
                },
            },
        )
        session = init.headers["mcp-session-id"]
        assert (
            client.post(
                gateway.url,
                headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            ).status_code
            == 202
        )
    host, port = gateway.base.removeprefix("http://").split(":")
    forwarded = 0
    for number in range(1, 7):  # a new connection each time: dealt to the workers in turn
        body = json.dumps(
            {"jsonrpc": "2.0", "id": number, "method": "tools/list", "params": {"_meta": {"pad": "x" * 1500}}}
        )
        head = (
            f"POST /mcp HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
            f"accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n"
            f"mcp-protocol-version: 2025-11-25\r\nexpect: 100-continue\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n"
        )
        with socket.create_connection((host, int(port)), timeout=30) as conn:
            conn.sendall(head.encode())
            interim = b""
            while b"\r\n\r\n" not in interim:
                chunk = conn.recv(4096)
                assert chunk, f"closed before 100 Continue: {interim!r}"
                interim += chunk
            assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim
            conn.sendall(body.encode())
            answer = interim.partition(b"\r\n\r\n")[2]
            while chunk := conn.recv(65536):
                answer += chunk
        head_bytes, _, payload = answer.partition(b"\r\n\r\n")
        assert head_bytes.startswith(b"HTTP/1.1 200 OK"), answer[:300]
        forwarded += b"x-mcpgw-forwarded-by" in head_bytes
        if b"transfer-encoding: chunked" in head_bytes:  # a forwarded answer streams back chunked
            payload = dechunk(payload)
        message = json.loads(payload)
        assert message["id"] == number and "tools" in message["result"], message
    assert forwarded > 0  # some went through the other worker


def test_the_forwarders_parser_passes_over_an_interim_answer():
    import httptools

    from mcpgw.gateway.http.worker_routing import _Answer

    answer = _Answer()
    answer.parser = httptools.HttpResponseParser(answer)
    answer.parser.feed_data(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: 1\r\n\r\nhe")
    assert answer.headers == [(b"content-length", b"5"), (b"x-a", b"1")] and not answer.complete
    answer.parser.feed_data(b"llo")
    assert answer.complete and b"".join(answer.chunks) == b"hello" and answer.parser.get_status_code() == 200


def test_connections_are_dealt_to_the_workers_evenly(workers):
    """Eight long-lived clients (an agent harness's) hold four connections on each worker: none is left
    with most of the load, as a kernel hash of the connections' addresses (SO_REUSEPORT) often did."""
    gateway, _, _ = workers
    clients = [httpx.Client(timeout=30) for _ in range(8)]
    try:
        served_by = [
            client.post(
                gateway.url,
                headers=HEADERS,
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": f"c{n}", "version": "1"},
                    },
                },
            ).headers["x-mcpgw-worker"]
            for n, client in enumerate(clients)
        ]
        again = [
            client.post(gateway.url, headers=HEADERS, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).headers[
                "x-mcpgw-worker"
            ]
            for client in clients
        ]  # the same connection, the same worker
    finally:
        for client in clients:
            client.close()
    assert sorted(served_by) == ["0"] * 4 + ["1"] * 4
    assert again == served_by


def test_an_untagged_newcomer_keeps_its_lane(workers):
    gateway, recorded, _ = workers
    chosen = list(reversed(newcomer_requests(recorded)))[:30]

    async def go() -> list[Any]:
        with anyio.fail_after(120):
            async with Client(gateway.url, mode="2026-07-28") as client:  # no run id: its lane is its cookie
                return [await ask(client, entry) for entry in chosen]

    for entry, got in zip(chosen, anyio.run(go), strict=True):
        assert got == expected_answer(entry), (entry["server"], entry["params"])


def test_the_call_log_sits_with_the_cassette_it_replays(workers):
    """As a single process keeps it: one session folder under cassettes/<name>/runs/, which
    both workers append to; the recording itself is not written."""
    from mcpgw.recorder.calllog import iter_calls

    gateway, _, home = workers
    entry = next(e for e in session_lane(home) if e["method"] == "tools/call")

    async def one_call() -> None:  # one call known to be in the log, whatever ran before
        with anyio.fail_after(60):
            async with Client(f"{gateway.url}?run=log-check", mode="2026-07-28") as client:
                await ask(client, entry)

    anyio.run(one_call)
    sessions = list((home / "cassettes" / "default" / "runs").iterdir())
    assert len(sessions) == 1 and sessions[0].name.endswith("-replay"), sessions
    deadline = time.monotonic() + 30
    while not any(r.get("run_id") == "log-check" for r in iter_calls(sessions[0])):
        assert time.monotonic() < deadline, "the call was not logged within 30 s"
        time.sleep(0.1)  # the workers' call-log writer is asynchronous; bounded by the deadline
    assert sorted(p.name for p in (home / "cassettes").iterdir()) == ["default"]  # no stray replay-<time> cassette


def test_workers_need_replay(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--mode",
            "live",
            "--workers",
            "2",
            "--config",
            str(ROOT / "servers.lock.yaml"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("mcpgw: --workers needs --mode replay")


def test_workers_stop_when_their_parent_is_killed(tmp_path):
    """A parent that dies without a word (SIGKILL) closes its end of every worker's channel: the
    workers stop rather than linger with the cassette open and nobody dealing them connections."""
    gateway = start_workers(tmp_path)
    children = [
        int(pid) for pid in Path(f"/proc/{gateway.process.pid}/task/{gateway.process.pid}/children").read_text().split()
    ]
    assert len(children) == 2
    try:
        os.kill(gateway.process.pid, signal.SIGKILL)
        gateway.process.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(pid_alive(pid) for pid in children):
            assert time.monotonic() < deadline, f"workers still running 30 s after their parent died: {gateway.log()}"
            time.sleep(0.1)
        assert gateway.log().count("the --workers parent is gone") == 2
    finally:
        for pid in children:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_per_server_endpoints_and_sse_under_workers(workers):
    """`/servers/<id>/mcp` works with --workers: sessionless calls of many runs (each run's calls at its
    worker, whichever connection brings them), SDK sessions, and tagged SSE streams; an untagged SSE
    stream is refused in one line (its message posts could not find the worker holding it)."""
    gateway, _, _ = workers
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "convert_temperature",
            "arguments": {"from_unit": "celsius", "to_unit": "fahrenheit", "value": 0},
        },
    }
    answers, served = [], set()
    with httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30) as client:
        for n in range(8):
            got = client.post(
                f"{gateway.base}/servers/unit_converter/mcp?run=w-{n}",
                json=call,
                headers={"accept": "application/json", "content-type": "application/json"},
            )
            assert got.status_code == 200, got.text
            answers.append(got.json()["result"])
            served.add(got.headers["x-mcpgw-worker"] if "x-mcpgw-forwarded-by" not in got.headers else "forwarded")
    assert all(answer == answers[0] for answer in answers) and "32" in json.dumps(answers[0])
    assert served == {"0", "1"} or "forwarded" in served  # both workers took part

    async def sdk_and_sse() -> None:
        with anyio.fail_after(60):
            async with Client(f"{gateway.base}/servers/unit_converter/mcp?run=w-sdk", mode="legacy") as client:
                result = await client.call_tool("convert_temperature", call["params"]["arguments"])
                assert (
                    result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta", "result_type"})
                    == answers[0]
                )
            from mcp import ClientSession
            from mcp.client.sse import sse_client

            async with (
                sse_client(f"{gateway.base}/servers/unit_converter/sse?run=w-sse") as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("convert_temperature", call["params"]["arguments"])
                assert (
                    result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta", "result_type"})
                    == answers[0]
                )

    anyio.run(sdk_and_sse)
    refused = httpx.get(f"{gateway.base}/sse", timeout=10)
    assert refused.status_code == 400
    assert (
        refused.json()["error"]["message"]
        == "with --workers, /sse needs a run id: GET /sse?run=<id> (or an X-Run-Id header)"
    )


def test_workers_are_numbered_alike_in_the_banner_the_header_and_status(workers):
    """From 0 everywhere: the start banner said `worker 1 of 2` for the worker x-mcpgw-worker and /status call 0."""
    import re

    gateway, _, _ = workers
    assert sorted(re.findall(r"serving MCP at \S+ \(worker (\d) of workers 0-1\)", gateway.log())) == ["0", "1"]
    headers, indexes = set(), set()
    for _ in range(2):  # connections are dealt in turn: one to each worker
        ping = httpx.post(gateway.url, headers=HEADERS, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30)
        headers.add(ping.headers["x-mcpgw-worker"])
    for _ in range(2):
        indexes.add(str(httpx.get(gateway.base + "/status", timeout=30).json()["worker"]["index"]))
    assert headers == indexes == {"0", "1"}
