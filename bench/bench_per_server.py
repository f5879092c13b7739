"""A per-server endpoint beside `/mcp`: per-call cost through the same gateway and upstream. Asserts nothing.

    python bench/bench_per_server.py [--repeats 3] [--seq 300] [--clients 8] [--per-client 100]

One upstream (the small Python stdio echo server, bench/echo_server.py), two gateways: live
(validation audit, call log) and replay (of a recording made first). Against each, in interleaved
rounds (every row of a round back to back, so a drifting VM shifts all rows alike):
  SDK client (handshake era) on `/mcp` (name `up__echo`) and on `/servers/up/mcp` (name `echo`);
  raw httpx, one session each, on `/mcp` and on `/servers/up/mcp` (the gateway's own cost shows better
  without the SDK client's);
  raw httpx sessionless on `/servers/up/mcp?run=...` (MCP-Bench's way, on a kept-alive connection).
Per row: p50 of `--seq` sequential calls, calls/s of `--clients` x `--per-client` concurrent calls, and the
gateway's CPU per call (the process and its upstream). Medians over `--repeats` rounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_gateway import summarize  # noqa: E402
from compare_peers import WORKLOADS, Target, group_cpu, rounds, start_gateway  # noqa: E402

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def raw_clients(url: str, tool: str, clients: int, per_client: int, sessionless: bool) -> dict:
    """httpx clients posting prebuilt tools/call bodies: in a session of their own, or with none."""
    latencies: list[float] = []

    async def worker() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            headers = dict(HEADERS)
            if sessionless:
                headers["accept"] = "application/json"
            else:
                init = await client.post(
                    url,
                    headers=HEADERS,
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
                )
                headers.update({"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"})
            bodies = [
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {"message": f"hello {i}"}},
                }
                for i in range(per_client)
            ]
            for body in bodies:
                t0 = time.perf_counter()
                answer = await client.post(url, json=body, headers=headers)
                latencies.append(time.perf_counter() - t0)
                assert answer.status_code == 200 and '"isError":false' in answer.text, answer.text[:200]

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(worker)
    return summarize(latencies, time.perf_counter() - started)


class RawTarget(Target):
    """A row measured with raw httpx clients instead of the SDK's."""

    def __init__(self, name: str, url: str, tool: str, proc: object, sessionless: bool = False) -> None:
        super().__init__(name, url, proc)  # type: ignore[arg-type]
        self.tool, self.sessionless = tool, sessionless

    def measure_round(self, args: argparse.Namespace) -> None:
        before = group_cpu(self.proc.pid)  # type: ignore[union-attr]
        self.seq.append(anyio.run(raw_clients, self.target, self.tool, 1, args.seq, self.sessionless)["p50_ms"])
        concurrent = anyio.run(raw_clients, self.target, self.tool, args.clients, args.per_client, self.sessionless)
        self.server_cpu += group_cpu(self.proc.pid) - before  # type: ignore[union-attr]
        self.conc.append(concurrent["calls_s"])
        self.clients_cpu.append(float("nan"))
        self.calls += args.seq + args.clients * args.per_client


def rows_for(gateway: Target, label: str) -> list[Target]:
    """The rows of one gateway process: each measures only its own phase of that process's CPU."""
    base = str(gateway.target).removesuffix("/mcp")
    one = f"{base}/servers/up/mcp"
    return [
        Target(f"{label}: SDK client, /mcp", f"{base}/mcp", gateway.proc),
        Target(f"{label}: SDK client, /servers/up/mcp", one, gateway.proc),
        RawTarget(f"{label}: raw session, /mcp", f"{base}/mcp", "up__echo", gateway.proc),
        RawTarget(f"{label}: raw session, /servers/up/mcp", one, "echo", gateway.proc),
        RawTarget(
            f"{label}: raw sessionless, /servers/up/mcp?run=",
            f"{one}?run=bench-{label}",
            "echo",
            gateway.proc,
            sessionless=True,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seq", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=100)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-per-server-"))
    command = WORKLOADS["python"][1]
    config = tmp / "up.yaml"
    config.write_text(
        f"version: 1\nservers:\n  up:\n    command: {command[0]}\n    args: {command[1:]!r}\n"
        "    flags: [stateless]\n".replace("'", '"')
    )
    cassettes = tmp / "cassettes"
    began = datetime.now(UTC)
    record = start_gateway("record", config, cassettes, ["--mode", "record", "--cassette", "rec"], {})
    try:  # the replay rows replay what this records (every message they send, each row its own lane)
        rounds([*rows_for(record, "record")], argparse.Namespace(**{**vars(args), "repeats": 1}))
    finally:
        record.stop()
    gateways = [
        start_gateway("live", config, cassettes, ["--mode", "live", "--cassette", "live-log"], {}),
        start_gateway(
            "replay", config, cassettes, ["--mode", "replay", "--cassette", "rec", "--log-cassette", "rlog"], {}
        ),
    ]
    try:
        targets = rows_for(gateways[0], "live") + rows_for(gateways[1], "replay")
        # A round not counted: every row's first connections, imports and caches warm, so the first row is not penalised.
        rounds(targets, argparse.Namespace(**{**vars(args), "repeats": 1, "seq": 20, "per_client": 10}))
        for target in targets:
            target.seq, target.conc, target.clients_cpu, target.server_cpu, target.calls = [], [], [], 0.0, 0
        rounds(targets, args)
    finally:
        for gateway in gateways:
            gateway.stop()
    print(
        f"\nmeasured {began:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC on {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.1f}); {args.seq} sequential calls, {args.clients} clients x {args.per_client}; medians of "
        f"{args.repeats} interleaved rounds\n"
    )
    print("| path | seq p50 ms | conc calls/s | gateway CPU ms/call |\n|---|---|---|---|")
    rows = {t.name: t.row() for t in targets}
    for name, p50, rate, cpu, _ in rows.values():
        print(f"| {name} | {p50:.2f} | {rate:.0f} | {cpu:.2f} |")
    print()
    for label in ("live", "replay"):
        for kind in ("SDK client", "raw session"):
            mcp, own = rows[f"{label}: {kind}, /mcp"], rows[f"{label}: {kind}, /servers/up/mcp"]
            print(
                f"{label}, {kind}: /servers/up/mcp costs {own[3] / mcp[3]:.2f}x /mcp's gateway CPU per call, "
                f"p50 {own[1] / mcp[1]:.2f}x, calls/s {own[2] / mcp[2]:.2f}x (target: CPU and p50 <= 1.0x, give or take noise)"
            )
        sessionless = rows[f"{label}: raw sessionless, /servers/up/mcp?run="]
        mcp = rows[f"{label}: raw session, /mcp"]
        print(
            f"{label}, sessionless: {sessionless[3] / mcp[3]:.2f}x /mcp's gateway CPU per call, p50 {sessionless[1] / mcp[1]:.2f}x"
        )


if __name__ == "__main__":
    main()
