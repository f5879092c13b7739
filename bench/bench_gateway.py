"""Gateway benchmark: prints a table, asserts nothing.

Against the same upstream (server-everything's `echo`, started with npx), in one run:
  (a) direct: the SDK client over stdio to the upstream
  (b) naive: a few-line SDK proxy (bench/naive_proxy.py), streamable HTTP, JSON responses
  (c) mcpgw live: the gateway, validation (audit) and call log on (default adaptive responses: plain JSON
      unless a request needs a stream; this client asks for no progress and accepts no server requests)
  (c') mcpgw live --responses sse (every answer an SSE stream)
  (d) mcpgw record: (c) plus every exchange committed to the cassette before the answer
  (e) mcpgw replay: answers from the cassette (d) wrote, no upstream process
For each: p50, p99 and calls/s with 1, 8 and 16 concurrent clients.
Then: the gateway's own work per call (from its /status; time in the gateway minus the
upstream wait) and inline validation time for the reference servers' real schemas.

    python bench/bench_gateway.py [--calls 500]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summarize(latencies: list[float], wall: float) -> dict:
    latencies.sort()
    return {
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "calls_s": len(latencies) / wall,
    }


async def measure(target, tool: str, calls: int, clients: int) -> dict:
    latencies: list[float] = []

    async def worker(n: int) -> None:
        async with Client(target, mode="legacy") as client:
            await client.call_tool(tool, {"message": "warm"})
            for i in range(n):
                t0 = time.perf_counter()
                result = await client.call_tool(tool, {"message": f"hello {i}"})
                latencies.append(time.perf_counter() - t0)
                assert not result.is_error

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(worker, calls // clients)
    return summarize(latencies, time.perf_counter() - started)


async def measure_raw(url: str, tool: str, calls: int, clients: int) -> dict:
    """A light client (httpx, prebuilt JSON-RPC bodies) so that the gateway, not the client, is measured."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    latencies: list[float] = []

    async def worker(n: int) -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            init = await client.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "0"},
                    },
                },
                headers=headers,
            )
            session = {
                **headers,
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
            bodies = [
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": i + 1,
                        "method": "tools/call",
                        "params": {"name": tool, "arguments": {"message": f"hello {i}"}},
                    }
                ).encode()
                for i in range(n)
            ]
            for body in bodies:
                t0 = time.perf_counter()
                response = await client.post(url, content=body, headers=session)
                latencies.append(time.perf_counter() - t0)
                assert response.status_code == 200 and b'"isError":true' not in response.content, response.text[:200]

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(worker, calls // clients)
    return summarize(latencies, time.perf_counter() - started)


def wait_http(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


def wait_ready(base: str, server: str, timeout: float = 120) -> None:
    """Until the gateway at `base` answers and its upstream `server` is ready."""
    wait_http(base + "/healthz", timeout)
    deadline = time.monotonic() + timeout
    while httpx.get(base + "/status").json()["servers"][server]["state"] != "ready":
        if time.monotonic() > deadline:
            raise SystemExit(f"{server}: upstream not ready within {timeout:g}s")
        time.sleep(0.2)  # polling another process's state; bounded by the deadline


def start(cmd: list[str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        cmd, cwd=cwd or ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def validation_timing() -> dict:
    """p50 of one inline check per real tool schema of the reference servers (valid arguments)."""
    from mcpgw.gateway.tools.validation import ValidatorCache

    cache = ValidatorCache()
    samples = []
    cases = [
        ({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}, {"message": "hi"}),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
            {"a": 1, "b": 2},
        ),
        (
            {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
            {"timezone": "UTC"},
        ),
        (
            {
                "type": "object",
                "properties": {"path": {"type": "string"}, "head": {"type": "number"}, "tail": {"type": "number"}},
                "required": ["path"],
                "additionalProperties": False,
                "$schema": "http://json-schema.org/draft-07/schema#",
            },
            {"path": "/tmp/x", "head": 3},
        ),
        (
            {
                "type": "object",
                "properties": {
                    "source_timezone": {"type": "string"},
                    "time": {"type": "string"},
                    "target_timezone": {"type": "string"},
                },
                "required": ["source_timezone", "time", "target_timezone"],
            },
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        ),
        (
            {
                "type": "object",
                "properties": {
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                            "required": ["oldText", "newText"],
                        },
                    },
                    "path": {"type": "string"},
                    "dryRun": {"type": "boolean", "default": False},
                },
                "required": ["path", "edits"],
            },
            {"path": "/tmp/x", "edits": [{"oldText": "a", "newText": "b"}]},
        ),
    ]
    for schema, args in cases:
        compiled = cache.compile(schema)
        for _ in range(2000):
            t0 = time.perf_counter()
            compiled.check(args)
            samples.append(time.perf_counter() - t0)
    samples.sort()
    return {"p50_us": samples[len(samples) // 2] * 1e6, "p99_us": samples[int(len(samples) * 0.99)] * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=480)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 16])
    args = parser.parse_args()
    rows = []

    direct = StdioServerParameters(command=UPSTREAM[0], args=UPSTREAM[1:])
    for clients in args.clients:
        rows.append(("(a) direct stdio", clients, anyio.run(measure, direct, "echo", args.calls, clients)))

    port = free_port()
    naive = start([sys.executable, "bench/naive_proxy.py", str(port), *UPSTREAM])
    try:
        wait_http(f"http://127.0.0.1:{port}/mcp")
        for clients in args.clients:
            rows.append(
                (
                    "(b) naive SDK proxy",
                    clients,
                    anyio.run(measure, f"http://127.0.0.1:{port}/mcp", "echo", args.calls, clients),
                )
            )
    finally:
        stop(naive)

    tmp = Path(tempfile.mkdtemp())
    config = tmp / "bench.yaml"
    config.write_text(
        f"version: 1\nservers:\n  everything:\n    command: npx\n    args: {UPSTREAM[1:]!r}\n".replace("'", '"')
    )
    own = {}
    raw_rows: list = []
    setups = [
        ("(c) mcpgw live", ["--mode", "live", "--cassette", "live"]),
        ("(c') mcpgw live, sse", ["--mode", "live", "--cassette", "live-sse", "--responses", "sse"]),
        ("(d) mcpgw record", ["--mode", "record", "--cassette", "rec"]),
        ("(e) mcpgw replay", ["--mode", "replay", "--cassette", "rec", "--log-cassette", "replay-log"]),
    ]
    for name, extra in setups:
        port = free_port()
        gateway = start(
            [
                sys.executable,
                "-m",
                "mcpgw.cli",
                "serve",
                "--naming",
                "prefix",
                "--config",
                str(config),
                "--port",
                str(port),
                "--cassettes-dir",
                str(tmp),
                "--validate",
                "audit",
                *extra,
            ]
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, "everything")
            for clients in args.clients:
                rows.append((name, clients, anyio.run(measure, base + "/mcp", "everything__echo", args.calls, clients)))
            own[name] = httpx.get(base + "/status").json()["own_work_us"]
            if name in ("(c) mcpgw live", "(d) mcpgw record", "(e) mcpgw replay"):
                for clients in args.clients:
                    raw_rows.append(
                        (name, clients, anyio.run(measure_raw, base + "/mcp", "everything__echo", args.calls, clients))
                    )
        finally:
            stop(gateway)

    print(f"\nupstream: {' '.join(UPSTREAM)} tool echo; {args.calls} calls per row; machine: {os.cpu_count()} cores\n")
    print(f"{'setup':<26}{'clients':>8}{'p50 ms':>10}{'p99 ms':>10}{'calls/s':>10}")
    for name, clients, r in rows:
        print(f"{name:<26}{clients:>8}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}{r['calls_s']:>10.0f}")
    print("\nthe same through a light client (httpx, prebuilt JSON-RPC bodies: the gateway is what is measured)")
    print(f"{'setup':<26}{'clients':>8}{'p50 ms':>10}{'p99 ms':>10}{'calls/s':>10}")
    for name, clients, r in raw_rows:
        print(f"{name:<26}{clients:>8}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}{r['calls_s']:>10.0f}")
    for label, table in (("SDK client", rows), ("light client", raw_rows)):
        by = {(name, clients): r for name, clients, r in table}
        print()
        for clients in args.clients:
            live, rec, rep = (
                by[("(c) mcpgw live", clients)],
                by[("(d) mcpgw record", clients)],
                by[("(e) mcpgw replay", clients)],
            )
            print(
                f"{label}, {clients:>2} clients: replay/live throughput {rep['calls_s'] / live['calls_s']:.2f}x (target >= 2x); "
                f"recording cost {100 * (1 - rec['calls_s'] / live['calls_s']):+.1f}% of live throughput (target <= 10%)"
            )
    for name, o in own.items():
        if o:
            print(
                f"gateway own work per call, {name}: p50 {o['p50']:.0f} us, p99 {o['p99']:.0f} us (n={o['n']}; target p50 <= 500 us)"
            )
    v = validation_timing()
    print(
        f"inline validation, typical schemas: p50 {v['p50_us']:.1f} us, p99 {v['p99_us']:.1f} us   (target p50 <= 25 us)"
    )


if __name__ == "__main__":
    main()
