"""What the serving side can take when the client is not the bottleneck: replay, its workers, the SDK floor.

compare_peers.py measures with the MCP SDK client, which needs 1.4-2 ms of CPU per call and so
caps every row near what one core of client can send. Here the load comes from bench/raw_load.py
(about 0.035 ms of CPU per call, in its own process), so calls/s shows the server's own capacity:
  the SDK floor    bench/echo_server.py answering over HTTP itself (an SDK server, no gateway)
  the null server  bench/null_server.py (canned answers, no MCP work)
  mcpgw replay     the gateway answering from a cassette of the small Python echo server
  mcpgw replay --workers N
Per row: calls/s of `--clients` connections x `--calls` calls, p50, the serving side's CPU per call
(process and descendants) and the load generator's; medians of `--repeats` rounds, each of which
measures every row back to back (all servers run at once). Asserts nothing.

    python bench/bench_capacity.py [--clients 8] [--calls 1000] [--repeats 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_gateway import free_port, stop  # noqa: E402
from compare_peers import group_cpu, serve, start_gateway  # noqa: E402
from raw_load import load  # noqa: E402

FLOOR = "the SDK floor (an SDK server answering over HTTP itself)"
NULL = "a null HTTP server (canned answers, no MCP work)"
REPLAY = "mcpgw replay"


def measure_round(url: str, tool: str, pid: int, args: argparse.Namespace) -> dict:
    cpu = group_cpu(pid)
    out = load(url, tool, args.clients, args.calls)
    out["server_cpu_ms"] = (group_cpu(pid) - cpu) / (args.clients * args.calls) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="*", default=[2])
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-capacity-"))
    config = tmp / "echo.yaml"
    config.write_text(
        f"version: 1\nservers:\n  up:\n    command: {sys.executable}\n    args: [{str(BENCH / 'echo_server.py')!r}]\n"
    )
    cassettes = tmp / "cassettes"
    record = start_gateway("record", config, cassettes, ["--mode", "record", "--cassette", "rec"], {})
    try:
        load(str(record.target), "up__echo", 1, max(args.calls, 50))  # the sequence every replayed client will make
    finally:
        record.stop()

    # Every server runs at once and each round measures all rows back to back (the VM's speed drifts).
    servers: list[tuple[str, str, str, object]] = []  # name, url, tool, process
    try:
        for name, script in ((FLOOR, ["echo_server.py", "--http"]), (NULL, ["null_server.py"])):
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            servers.append(
                (name, url, "echo", serve([sys.executable, str(BENCH / script[0]), *script[1:], str(port)], url))
            )
        for workers in [1, *args.workers]:
            extra = ("--workers", str(workers)) if workers > 1 else ()
            name = f"{REPLAY} --workers {workers}" if workers > 1 else REPLAY
            replay = start_gateway(
                name,
                config,
                cassettes,
                ["--mode", "replay", "--cassette", "rec", "--log-cassette", f"replay-log-{workers}", *extra],
                {},
            )
            servers.append((name, str(replay.target), "up__echo", replay.proc))
        for _, url, tool, _ in servers:
            load(url, tool, args.clients, 50)  # warm up
        runs: dict[str, list[dict]] = {name: [] for name, _, _, _ in servers}
        for _ in range(args.repeats):
            for name, url, tool, proc in servers:
                runs[name].append(measure_round(url, tool, proc.pid, args))
    finally:
        for _, _, _, proc in servers:
            stop(proc)
    rows = [
        (name, {key: statistics.median(run[key] for run in done) for key in done[0]}) for name, done in runs.items()
    ]

    print(
        f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; raw load generator, handshake era; "
        f"{args.clients} connections x {args.calls} calls; medians of {args.repeats}\n"
    )
    print("| path | calls/s | p50 ms | server CPU ms/call | load generator CPU ms/call |\n|---|---|---|---|---|")
    for name, out in rows:
        print(
            f"| {name} | {out['calls_s']:.0f} | {out['p50_ms']:.2f} | {out['server_cpu_ms']:.2f} | {out['load_cpu_ms']:.3f} |"
        )
    by = dict(rows)
    floor, replay = by[FLOOR], by[REPLAY]
    print(
        f"\nreplay: calls/s {replay['calls_s'] / floor['calls_s']:.2f}x the SDK floor's (target >= 2x); "
        f"p50 {replay['p50_ms'] / floor['p50_ms']:.2f}x (target <= 0.6x); "
        f"server CPU per call {replay['server_cpu_ms'] / floor['server_cpu_ms']:.2f}x"
    )
    cores = os.cpu_count() or 1
    for name, out in rows:
        if "--workers" in name:
            workers = int(name.rsplit(" ", 1)[1])
            spare = cores - out["load_cpu_ms"] * out["calls_s"] / 1000  # cores the load generator leaves
            print(
                f"{name}: calls/s {out['calls_s'] / replay['calls_s']:.2f}x one process "
                f"(target >= {1 + 0.8 * (min(workers, cores) - 1):.1f}x); the load generator used "
                f"{cores - spare:.2f} of {cores} cores"
            )


if __name__ == "__main__":
    main()
