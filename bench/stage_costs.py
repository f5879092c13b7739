"""What each layer of a replayed `tools/call` costs: the call cut short at one stage after another. Asserts nothing.

    python bench/stage_costs.py [--calls 3000] [--batch 240] [--repeats 3] [--code DIR]

The measure is bench_cpu_per_call's (the gateway's utime+stime from /proc per call, 8 plain httpx sessions,
handshake era, a replay of the same `echo` recording). Each row is a replay gateway whose hot lane stops at
one stage and answers a canned result (bench/_staged.py says how), so the difference between two rows is
what the layer between them costs, measured rather than sampled; all rows run at once, in interleaved
rounds. A last row goes the pipeline's way (`MCPGW_HOT_LANE=off`): the cost of the same call without the
lane. The rows take turns in batches of `--batch` calls, as bench_cpu_per_call's do. `--code DIR` measures
the code in DIR (its bench/_staged.py too).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_cpu_per_call import UPSTREAM, Row, _interleaved_cpu  # noqa: E402
from bench_gateway import free_port, stop  # noqa: E402
from compare_peers import serve, wait_gateway  # noqa: E402
from raw_load import load  # noqa: E402

STAGES = [  # (MCPGW_STAGE, what the row does, what the step from the row before adds)
    (
        "held",
        "request held whole at the HTTP protocol, canned answer written",
        "uvicorn's HTTP parsing, the lane's hold, the answer's write (and the socket)",
    ),
    (
        "prepared",
        "+ every layer's check (HotLane.prepare)",
        "headers to context, guard and JSON parse, session and id tables, the fast path's checks",
    ),
    (
        "tasked",
        "+ the answer's task, session held, cancel scope",
        "a task per answer, hold/release, idle countdown suspended, id filed and released",
    ),
    (
        "unlogged",
        "+ middleware, handler, lookup, result shaping (no call-log record)",
        "server middleware, tool lookup and validation, cassette lookup, result shaping, envelope",
    ),
    ("", "the whole call", "the call-log record (build, size check, pack, LMDB commit)"),
]
UNFORWARDED = ("unforwarded", "the whole call but the cassette lookup")
PIPELINE = "the whole call, the pipeline's way (MCPGW_HOT_LANE=off)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=240, help="calls a row makes in its turn before the next row's")
    parser.add_argument("--code", type=Path, default=BENCH.parent)
    args = parser.parse_args()
    code = args.code.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-stages-"))
    config = tmp / "echo.yaml"
    config.write_text(f"version: 1\nservers:\n  up:\n    command: {UPSTREAM[0]}\n    args: [{UPSTREAM[1]!r}]\n")

    def gateway(extra: list[str], env: dict[str, str]) -> tuple[str, object]:
        port = free_port()
        proc = serve(
            [
                sys.executable,
                str(code / "bench" / "_staged.py"),
                "serve",
                "--naming",
                "prefix",
                "--config",
                str(config),
                "--port",
                str(port),
                "--cassettes-dir",
                str(tmp / "cassettes"),
                "--validate",
                "audit",
                *extra,
            ],
            f"http://127.0.0.1:{port}/healthz",
            env=env,
            cwd=code,
        )
        wait_gateway(f"http://127.0.0.1:{port}", extra)
        return f"http://127.0.0.1:{port}", proc

    base, proc = gateway(["--mode", "record", "--cassette", "rec"], {})
    try:
        load(base + "/mcp", "up__echo", 1, (args.repeats * args.calls + 2 * args.batch) // args.clients)
    finally:
        stop(proc)
    plan = [(stage, label, {"MCPGW_STAGE": stage}) for stage, label, _ in STAGES]
    plan += [
        (UNFORWARDED[0], UNFORWARDED[1], {"MCPGW_STAGE": UNFORWARDED[0]}),
        ("pipeline", PIPELINE, {"MCPGW_HOT_LANE": "off"}),
    ]
    rows = []
    try:
        for stage, label, env in plan:
            base, proc = gateway(
                ["--mode", "replay", "--cassette", "rec", "--log-cassette", f"log-{stage or 'whole'}"], env
            )
            rows.append((stage, label, base, proc, Row(label, base + "/mcp", "up__echo", proc)))
        asyncio.run(_interleaved_cpu([row for *_, row in rows], args.clients, args.calls, args.repeats, args.batch))
        made = args.repeats * args.calls + args.batch
        for stage, label, base, _, _ in rows:  # a lane row answered (nearly) all on the lane
            lane = httpx.get(base + "/status").json().get("hot_lane")
            if stage != "pipeline" and (lane is None or lane["declined"] > made / 100):
                raise SystemExit(f"{label}: the hot lane declined calls ({lane}); the row measures something else")
    finally:
        for _, _, _, proc, _ in rows:
            stop(proc)
    report(rows, args)


def report(rows: list, args: argparse.Namespace) -> None:
    cpu = {stage: statistics.median(row.cpu) for stage, _, _, _, row in rows}
    print(
        f"\nreplayed tools/call, {args.clients} httpx sessions x {args.calls // args.clients} calls, "
        f"medians of {args.repeats} interleaved rounds (server CPU ms per call)\n"
    )
    print("| stage | ms/call | step | the step adds |\n|---|---|---|---|")
    before = 0.0
    for stage, label, adds in STAGES:
        print(f"| {label} | {cpu[stage]:.3f} | {adds} | {cpu[stage] - before:+.3f} |")
        before = cpu[stage]
    print(
        f"| {UNFORWARDED[1]} | {cpu[UNFORWARDED[0]]:.3f} | the cassette lookup (keying, LMDB read, unpack) | "
        f"{cpu[''] - cpu[UNFORWARDED[0]]:+.3f} (whole call minus this row) |"
    )
    print(
        f"| {PIPELINE} | {cpu['pipeline']:.3f} | the pipeline's layers instead of the lane | {cpu['pipeline'] - cpu['']:+.3f} |"
    )


if __name__ == "__main__":
    main()
