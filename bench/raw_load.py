"""A load generator light enough that the server, not the client, is what gets measured.

The MCP SDK client spends 1.4-2 ms of CPU per call (bench/compare_peers.py prints it), so on
this 2-core machine it saturates a core before any fast server does. This one speaks the
handshake era over raw asyncio sockets (HTTP/1.1 keep-alive, one session per connection):
requests are built before the clock starts and an answer is only checked for a result, so it
costs about 0.035 ms of CPU per call (measured). Each client calls `tool` with `{"message": "hello <i>"}` for
i = 0..calls-1, in order: a cassette recorded with one client replays for every client.

    python bench/raw_load.py URL TOOL [--clients 8] [--calls 1000] [--procs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import time
from urllib.parse import urlsplit

PROTOCOL = "2025-11-25"


def _request(host: str, path: str, message: dict, session: str | None = None) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n"
    )
    if session:
        head += f"mcp-session-id: {session}\r\nmcp-protocol-version: {PROTOCOL}\r\n"
    return head.encode() + b"\r\n" + body


async def _answer(reader: asyncio.StreamReader) -> tuple[dict[bytes, bytes], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding") == b"chunked":  # an SSE answer (initialize): read every chunk
        body = b""
        while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readexactly(2)
        return headers, body
    return headers, await reader.readexactly(int(headers.get(b"content-length", b"0")))


async def _client(
    url: str,
    tool: str,
    calls: int,
    latencies: list[float],
    ready: list[int],
    all_ready: asyncio.Event,
    go: asyncio.Event,
) -> None:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(
            _request(
                parts.netloc,
                parts.path,
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": PROTOCOL,
                        "capabilities": {},
                        "clientInfo": {"name": "raw-load", "version": "0"},
                    },
                },
            )
        )
        headers, _ = await _answer(reader)
        session = headers[b"mcp-session-id"].decode()
        writer.write(
            _request(parts.netloc, parts.path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        )
        await _answer(reader)
        requests = [
            _request(
                parts.netloc,
                parts.path,
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {"message": f"hello {i}"}},
                },
                session,
            )
            for i in range(calls)
        ]
        ready[0] += 1
        if ready[0] == ready[1]:
            all_ready.set()
        await go.wait()
        for request in requests:
            started = time.perf_counter()
            writer.write(request)
            _, body = await _answer(reader)
            latencies.append(time.perf_counter() - started)
            if b'"result"' not in body or b'"isError":true' in body:
                raise RuntimeError(f"not a result: {body[:300]!r}")
    finally:
        writer.close()


async def _run(url: str, tool: str, clients: int, calls: int) -> tuple[list[float], float, float]:
    latencies: list[float] = []
    ready, all_ready, go = [0, clients], asyncio.Event(), asyncio.Event()
    tasks = [asyncio.create_task(_client(url, tool, calls, latencies, ready, all_ready, go)) for _ in range(clients)]
    waiting = asyncio.create_task(all_ready.wait())  # every client connected and initialized, or one failed
    await asyncio.wait([waiting, *tasks], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    cpu, started = time.process_time(), time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - started, time.process_time() - cpu


def _in_process(args: tuple, results: multiprocessing.Queue) -> None:
    try:
        results.put(asyncio.run(_run(*args)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        results.put(f"{type(exc).__name__}: {exc}"[:400])


def load(url: str, tool: str, clients: int = 8, calls: int = 1000, procs: int = 1) -> dict:
    """calls/s over all processes, p50 ms, and the load generator's own CPU ms per call."""
    results: multiprocessing.Queue = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(target=_in_process, args=((url, tool, clients, calls), results)) for _ in range(procs)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join()
    failed = [o for o in outcomes if isinstance(o, str)]
    if failed:
        raise RuntimeError(failed[0])
    latencies = sorted(x for o in outcomes for x in o[0])
    wall, cpu = max(o[1] for o in outcomes), sum(o[2] for o in outcomes)
    return {
        "calls_s": len(latencies) / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "load_cpu_ms": cpu / len(latencies) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("tool")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--procs", type=int, default=1)
    args = parser.parse_args()
    out = load(args.url, args.tool, args.clients, args.calls, args.procs)
    print(
        f"{out['calls_s']:.0f} calls/s, p50 {out['p50_ms']:.2f} ms, load generator CPU {out['load_cpu_ms']:.3f} ms/call"
    )


if __name__ == "__main__":
    main()
