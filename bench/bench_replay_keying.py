#!/usr/bin/env python3
"""What replay's keying and lane bookkeeping cost per call, in process (no HTTP, no SDK).

    python bench/bench_replay_keying.py [--calls 20000]

Times `CassetteUpstream.request` on recorded memory-server-like sessions: a server declared
stateless (key = what is asked), and a tracked one (key = what is asked + the run's history of
state-changing calls; divergence bookkeeping per lane), each over many lanes. The baseline row
is the bare lookup of a precomputed key, so the difference is what keying and lanes add.
Target (issue 9): at most 20 us p50 added per replayed call.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio

from mcpgw.cassette.state import StateModel
from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.replay.cassette_upstream import CassetteUpstream

TOOLS = [
    {"name": "create_entities", "inputSchema": {"type": "object"}},
    {"name": "read_graph", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]
CATALOG = {"catalog": {"init": {"serverInfo": {"name": "bench"}}, "tools": TOOLS}}


def session(step_count: int) -> list[tuple[str, dict]]:
    steps = []
    for i in range(step_count):
        if i % 3 == 0:
            steps.append(
                ("create_entities", {"entities": [{"name": f"e{i}", "entityType": "t", "observations": ["x" * 40]}]})
            )
        else:
            steps.append(("read_graph", {}))
    return steps


def recorded_entries(server: str, tracked: bool, steps: list[tuple[str, dict]]) -> list[dict]:
    model = StateModel(server, tracked, frozenset({"read_graph"}))
    history, entries = "", []
    for name, arguments in steps:
        params = {"name": name, "arguments": arguments}
        call = model.keyed("tools/call", params, history)
        entries.append(
            {
                "key": call.key,
                "base": call.base,
                "history": call.history,
                "server": server,
                "method": "tools/call",
                "params": params,
                "lane": "rec",
                "result": {"content": [{"type": "text", "text": "ok " * 20}]},
            }
        )
        history = call.history_after()
    return entries


async def time_replay(tracked: bool, calls: int, steps: list[tuple[str, dict]]) -> list[float]:
    upstream = CassetteUpstream("bench", CATALOG, recorded_entries("bench", tracked, steps), tracked=tracked)
    samples: list[float] = []
    lane = 0
    while len(samples) < calls:
        lane += 1
        for name, arguments in steps:
            options = CallOptions(lane=f"run-{lane}")
            started = time.perf_counter()
            await upstream.request("tools/call", {"name": name, "arguments": arguments}, options)
            samples.append(time.perf_counter() - started)
    return samples


def time_baseline(calls: int, steps: list[tuple[str, dict]]) -> list[float]:
    index = {e["key"]: [e] for e in recorded_entries("bench", False, steps)}
    keys = list(index)
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        _ = index[keys[i % len(keys)]][0]["result"]
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--steps", type=int, default=30, help="calls per recorded session (one lane each)")
    args = parser.parse_args()
    steps = session(args.steps)
    rows = [("bare lookup of a known key (baseline)", time_baseline(args.calls, steps))]
    rows.append(("stateless server: key + FIFO lane", anyio.run(time_replay, False, args.calls, steps)))
    rows.append(("tracked server: key + history + divergence", anyio.run(time_replay, True, args.calls, steps)))
    base = statistics.median(rows[0][1])
    print(f"{'path':<45} {'p50 us':>8} {'p99 us':>8} {'added p50 us':>13}")
    for label, samples in rows:
        ordered = sorted(samples)
        p50, p99 = statistics.median(ordered), ordered[int(0.99 * (len(ordered) - 1))]
        print(f"{label:<45} {p50 * 1e6:>8.1f} {p99 * 1e6:>8.1f} {(p50 - base) * 1e6:>13.1f}")


if __name__ == "__main__":
    main()
