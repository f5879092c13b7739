"""Server CPU per `tools/call`, the measure of issue 23, with its targets as ratios of one run. Asserts nothing.

    python bench/bench_cpu_per_call.py [--calls 3000] [--batch 240] [--repeats 3] [--skip-peers] [--before DIR]

Every row serves the same tiny upstream (bench/echo_server.py's `echo`, stdio) or is that server
itself answering over HTTP (the SDK floor); one more row, bench/bare_replay.py, does only the work a
replayed call cannot skip (HTTP, JSON, session, schema check, key, lookup, call-log record, LMDB commit),
so the gap between it and mcpgw replay is what the gateway's layers cost. Two measures, each in interleaved rounds (every server runs
at once; each round measures every row back to back, so the VM's drifting speed shifts all rows alike):
- CPU per call (and the kernel's part of it, stime): 8 plain httpx sessions per row (handshake era: initialize, then `tools/call`s), `--calls`
  calls per round, made in turns of `--batch` calls that alternate between the rows; the serving process's
  CPU time around each turn (its own process only, not the upstream it started; with --workers the workers
  too), read from the kernel's per-process CPU clock in nanoseconds (utime+stime from /proc count 10 ms ticks). The client's cost does not enter.
- calls/s under the raw load (bench/raw_load.py: 8 connections, about 0.035 ms of client CPU per call) for
  the floor, mcpgw replay and mcpgw replay --workers 2, and their server CPU per call under that load (not
  the issue's CPU measure: a turn of the event loop then reads several requests, which share its costs).
`--before DIR` adds the mcpgw rows once more, run from the code in DIR (e.g. `git archive main | tar -x -C DIR`),
so before and after stand in the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_gateway import free_port, stop  # noqa: E402
from compare_peers import group_cpu, peer_env, precise_cpu, serve, wait_gateway  # noqa: E402
from raw_load import load  # noqa: E402

PROTOCOL = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
FLOOR = "SDK floor (echo server answering HTTP itself)"
BARE = "bare replay (bench/bare_replay.py: a replay's work, no layers)"
UPSTREAM = [sys.executable, str(BENCH / "echo_server.py")]


@dataclass
class Row:
    name: str
    url: str
    tool: str
    proc: object
    tree: bool = False  # count the descendants too (the --workers rows: no upstream there, only workers)
    raw: bool = False  # also measured under the raw load
    cpu: list[float] = field(default_factory=list)  # ms per call, per round
    kernel: list[float] = field(
        default_factory=list
    )  # of which stime (the kernel's: sockets, LMDB's writes), per round
    rate: list[float] = field(default_factory=list)  # calls/s under the raw load, per round
    raw_cpu: list[float] = field(default_factory=list)  # server CPU ms per call under the raw load, per round

    def cpu_now(self) -> float:
        return group_cpu(self.proc.pid) if self.tree else precise_cpu(self.proc.pid)

    def kernel_now(self) -> float:
        return 0.0 if self.tree else proc_cpu(self.proc.pid, kernel_only=True)


def proc_cpu(pid: int, *, kernel_only: bool = False) -> float:
    """utime+stime of one process (or its stime alone), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[12]) + (0 if kernel_only else int(fields[11]))) / os.sysconf("SC_CLK_TCK")


async def _session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
    }
    answer = await client.post(url, json=init, headers={"accept": ACCEPT})
    answer.raise_for_status()
    headers = {"accept": ACCEPT, "mcp-protocol-version": PROTOCOL}
    if answer.headers.get("mcp-session-id"):
        headers["mcp-session-id"] = answer.headers["mcp-session-id"]
    await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


async def _interleaved_cpu(rows: list[Row], clients: int, calls: int, repeats: int, batch: int) -> None:
    """Server CPU ms per call of every row, appended to `row.cpu` once per round of `calls` calls. Every row's
    `clients` httpx sessions stay open throughout; the rows take turns a batch of `batch` calls at a time (each
    turn begun by the next row), so the VM's drifting speed shifts every row alike (measured: two identical
    gateways come out within 1-2% of each other, where whole rounds of 3,000 calls differ by up to 20%)."""
    per_client = batch // clients
    opened = []
    for row in rows:
        # A row's connections idle while the others take their turns: closed by the client before the servers'
        # keep-alive (5 s) would close them under a request being sent.
        sessions = [httpx.AsyncClient(timeout=60, limits=httpx.Limits(keepalive_expiry=4.0)) for _ in range(clients)]
        heads = await asyncio.gather(*(_session(c, row.url) for c in sessions))
        opened.append((row, sessions, heads, [0]))

    async def one_batch(
        row: Row, sessions: list[httpx.AsyncClient], heads: list[dict[str, str]], sent: list[int]
    ) -> None:
        first = sent[0]  # each client's calls go on where its last batch stopped: "hello 0", "hello 1", ...
        sent[0] += per_client

        async def drive(client: httpx.AsyncClient, head: dict[str, str]) -> None:
            for i in range(first, first + per_client):
                body = {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": row.tool, "arguments": {"message": f"hello {i}"}},
                }
                try:
                    answer = await client.post(row.url, json=body, headers=head)
                except httpx.HTTPError as exc:
                    raise RuntimeError(f"{row.name} ({row.url}), call {i + 1}: {exc!r}") from exc
                if answer.status_code != 200 or b'"result"' not in answer.content:
                    raise RuntimeError(f"{row.url}: {answer.status_code} {answer.text[:200]}")

        await asyncio.gather(*(drive(c, h) for c, h in zip(sessions, heads)))

    try:
        for entry in opened:  # warm up
            await one_batch(*entry)
        turns = max(1, calls // (per_client * clients))
        for number in range(repeats):
            print(f"round {number + 1} of {repeats}", file=sys.stderr)
            used = {id(row): 0.0 for row in rows}
            kernel = {id(row): 0.0 for row in rows}
            for turn in range(turns):
                for row, sessions, heads, sent in opened[turn % len(opened) :] + opened[: turn % len(opened)]:
                    before, before_kernel = row.cpu_now(), row.kernel_now()
                    await one_batch(row, sessions, heads, sent)
                    used[id(row)] += row.cpu_now() - before
                    kernel[id(row)] += row.kernel_now() - before_kernel
            for row in rows:
                row.cpu.append(used[id(row)] / (turns * per_client * clients) * 1000)
                row.kernel.append(kernel[id(row)] / (turns * per_client * clients) * 1000)
    finally:
        for _, sessions, _, _ in opened:
            await asyncio.gather(*(c.aclose() for c in sessions))


# mcpgw's parts (gateway/, recorder/, ...) import as mcpgw.<part> through the editable install's finder, which
# maps them to this checkout whatever the cwd. A `--before` tree's processes (and their --workers children,
# started with -m) get a sitecustomize that drops that finder and maps the parts to the tree instead: with -m
# alone they ran the tree's mcpgw/ with this checkout's parts, or failed at import.
SITE = """import os, sys
code = os.environ.get("MCPGW_BENCH_CODE")
if code:
    sys.path.insert(0, code)
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    import mcpgw
    mcpgw.__path__.append(code)
"""


def code_env(code: Path) -> dict[str, str]:
    """The environment that makes a process (and its children) run mcpgw from `code`."""
    site = Path(tempfile.mkdtemp(prefix="mcpgw-bench-site-"))
    (site / "sitecustomize.py").write_text(SITE)
    return {"MCPGW_BENCH_CODE": str(code), "PYTHONPATH": str(site)}


def start_mcpgw(config: Path, cassettes: Path, extra: list[str], code: Path) -> tuple[str, object]:
    """mcpgw serve run from the code in `code` (its own parts, not the installed checkout's)."""
    port = free_port()
    proc = serve(
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
            str(cassettes),
            "--validate",
            "audit",
            *extra,
        ],
        f"http://127.0.0.1:{port}/healthz",
        env=code_env(code),
        cwd=code,
    )
    base = f"http://127.0.0.1:{port}"
    wait_gateway(base, extra)
    return base + "/mcp", proc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000, help="tools/calls per round and row (httpx sessions)")
    parser.add_argument("--batch", type=int, default=240, help="calls a row makes in its turn before the next row's")
    parser.add_argument("--raw-calls", type=int, default=1000, help="calls per connection under the raw load")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--before", type=Path, help="a folder holding the code before the change")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-cpu-"))
    config = tmp / "echo.yaml"
    config.write_text(f"version: 1\nservers:\n  up:\n    command: {UPSTREAM[0]}\n    args: [{UPSTREAM[1]!r}]\n")
    cassettes = tmp / "cassettes"
    url, proc = start_mcpgw(config, cassettes, ["--mode", "record", "--cassette", "rec"], ROOT)
    try:  # the sequence every replayed client makes: "hello 0".."hello n-1" (raw load and httpx alike)
        load(url, "up__echo", 1, max(args.raw_calls, (args.repeats * args.calls + 2 * args.batch) // args.clients))
    finally:
        stop(proc)

    rows: list[Row] = []
    try:
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        rows.append(Row(FLOOR, url, "echo", serve([*UPSTREAM, "--http", str(port)], url), raw=True))
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        rows.append(Row(BARE, url, "echo", serve([sys.executable, str(BENCH / "bare_replay.py"), str(port)], url)))
        proxies = [("naive SDK proxy", lambda p: [sys.executable, str(BENCH / "naive_proxy.py"), str(p), *UPSTREAM])]
        if not args.skip_peers:
            proxies += [
                (
                    "mcp-proxy 0.13",
                    lambda p: [
                        str(peer_env("mcp-proxy") / "mcp-proxy"),
                        "--port",
                        str(p),
                        "--host",
                        "127.0.0.1",
                        "--log-level",
                        "WARNING",
                        "--",
                        *UPSTREAM,
                    ],
                ),
                (
                    "FastMCP 4.1.2 proxy",
                    lambda p: [
                        str(peer_env("fastmcp") / "python"),
                        str(BENCH / "peers" / "fastmcp_proxy.py"),
                        str(p),
                        *UPSTREAM,
                    ],
                ),
            ]
        for name, cmd in proxies:
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            rows.append(Row(name, url, "echo", serve(cmd(port), url)))
        codes = [("", ROOT)] + ([(" (before)", args.before.resolve())] if args.before else [])
        for suffix, code in codes:
            tag = "before" if suffix else "after"
            for name, extra, tree, raw in (
                ("mcpgw live", ["--mode", "live", "--cassette", f"live-log-{tag}"], False, False),
                (
                    "mcpgw replay",
                    ["--mode", "replay", "--cassette", "rec", "--log-cassette", f"log-{tag}"],
                    False,
                    True,
                ),
                (
                    "mcpgw replay --workers 2",
                    ["--mode", "replay", "--cassette", "rec", "--log-cassette", f"log-w-{tag}", "--workers", "2"],
                    True,
                    True,
                ),
            ):
                url, proc = start_mcpgw(config, cassettes, extra, code)
                rows.append(Row(name + suffix, url, "up__echo", proc, tree=tree, raw=raw))
        asyncio.run(_interleaved_cpu(rows, args.clients, args.calls, args.repeats, args.batch))
        for number in range(args.repeats):
            for row in rows if number % 2 == 0 else rows[::-1]:
                if row.raw:
                    before = row.cpu_now()
                    row.rate.append(load(row.url, row.tool, args.clients, args.raw_calls)["calls_s"])
                    row.raw_cpu.append((row.cpu_now() - before) / (args.clients * args.raw_calls) * 1000)
    finally:
        for row in rows:
            stop(row.proc)
    report(rows, args)


def report(rows: list[Row], args: argparse.Namespace) -> None:
    cpu = {r.name: statistics.median(r.cpu) for r in rows}
    rate = {r.name: statistics.median(r.rate) for r in rows if r.rate}
    print(
        f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.clients} httpx sessions x "
        f"{args.calls // args.clients} calls (handshake era); raw load {args.clients} x {args.raw_calls}; "
        f"medians of {args.repeats} interleaved rounds\n"
    )
    raw_cpu = {r.name: statistics.median(r.raw_cpu) for r in rows if r.raw_cpu}
    kernel = {r.name: statistics.median(r.kernel) for r in rows}
    print(
        "| row | server CPU ms/call | of which kernel | calls/s (raw load) | server CPU ms/call (raw load) |\n"
        "|---|---|---|---|---|"
    )
    for r in rows:
        own = "" if r.tree else f"{kernel[r.name]:.3f}"  # a process tree's kernel share is not followed
        print(
            f"| {r.name} | {cpu[r.name]:.3f} | {own} | {rate[r.name]:.0f} | {raw_cpu[r.name]:.3f} |"
            if r.name in rate
            else f"| {r.name} | {cpu[r.name]:.3f} | {own} | | |"
        )
    peers = {n: c for n, c in cpu.items() if not n.startswith(("mcpgw", "SDK floor", "bare replay"))}
    leanest = min(peers, key=peers.get)
    floor = cpu[FLOOR]
    print()
    for suffix in ("", " (before)") if args.before else ("",):
        replay, live, workers = f"mcpgw replay{suffix}", f"mcpgw live{suffix}", f"mcpgw replay --workers 2{suffix}"
        label = "before" if suffix else "now"
        print(
            f"{label}: replay CPU/call {cpu[replay] / floor:.2f}x the floor's (target <= 0.35x; the bare replay: "
            f"{cpu[BARE] / floor:.2f}x); replay calls/s {rate[replay] / rate[FLOOR]:.2f}x the floor's (target >= 1.8x)"
        )
        print(
            f"{label}: live CPU/call {cpu[live] / peers[leanest]:.2f}x the leanest peer's ({leanest}; target <= 0.4x)"
        )
        print(f"{label}: --workers 2 calls/s {rate[workers] / rate[replay]:.2f}x one process (target >= 1.6x)")
        # Not the measure (that is the httpx rows, about one request per event-loop turn): under the raw
        # load a turn reads several requests, and what they share (the loop's wake-up, one commit) shows here.
        print(f"{label}: under the raw load, replay CPU/call {raw_cpu[replay] / raw_cpu[FLOOR]:.2f}x the floor's")


if __name__ == "__main__":
    main()
