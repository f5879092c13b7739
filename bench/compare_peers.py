"""The gateway beside its peers, in one run: the comparison table of issue 12. Asserts nothing.

    python bench/compare_peers.py [--repeats 2] [--seq 300] [--clients 8] [--per-client 100]
                                  [--workloads everything python] [--skip-peers] [--workers 2]

Each peer runs in its own environment, made on first use with uv under a cache directory
outside the repository ($MCPGW_BENCH_CACHE, default ~/.cache/mcpgw-bench):
  mcp-proxy 0.13 (sparfenyuk; needs mcp 1.x)     FastMCP 4.1.2's proxy (mcp 2.x)
The naive SDK proxy (bench/naive_proxy.py), the SDK floor (bench/echo_server.py answering
HTTP itself), a null server (bench/null_server.py: canned answers, the client's own floor) and
mcpgw run in this environment. Two upstreams: server-everything's `echo`
(npx) and a small Python stdio echo server. Client: the MCP SDK `Client` (handshake era).
Per row: p50 of `--seq` sequential calls, and calls/s of `--clients` concurrent clients making
`--per-client` calls each; medians over `--repeats` rounds. Every server of a workload runs at once
and each round measures every row back to back, so a VM whose speed drifts (this one's does, by up
to 2x within minutes) shifts all rows of a round alike instead of favouring the rows measured in its
fast phase; only `mcpgw record` is measured alone, before the replay rows start (they replay it).
Also per row: the CPU the serving side (the process
and its descendants: proxy and the upstream it started, or the workers) spent per call, which a busy machine
disturbs far less than latency, and the CPU the SDK clients spent per call (they share this one process,
so their CPU bounds the calls/s any server can reach). mcpgw rows: live (validation audit and the
call log on), record (which also writes the cassette replay plays), replay, and the same with
the fast path off (MCPGW_FAST_PATH=off), and replay with --workers.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_gateway import free_port, stop, summarize, wait_ready  # noqa: E402

PEER_ENVS = {  # name -> requirements of its own environment
    "mcp-proxy": ["mcp-proxy==0.13.0", "mcp>=1.20,<2"],
    "fastmcp": ["fastmcp==4.1.2"],
}
WORKLOADS = {
    "everything": (
        "server-everything echo",
        ["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"],
    ),
    "python": ("small Python stdio echo", [sys.executable, str(BENCH / "echo_server.py")]),
}


def peer_env(name: str) -> Path:
    """The peer's own venv (created once, reused while its requirements are unchanged); returns its bin dir."""
    cache = Path(os.environ.get("MCPGW_BENCH_CACHE", Path.home() / ".cache" / "mcpgw-bench"))
    env = cache / f"peer-{name}"
    marker = env / "mcpgw-requirements.txt"
    wanted = "\n".join(PEER_ENVS[name])
    if marker.exists() and marker.read_text() == wanted:
        return env / "bin"
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    shutil.rmtree(env, ignore_errors=True)
    print(f"making the {name} environment in {env} ...", file=sys.stderr)
    subprocess.run([uv, "venv", "-q", "-p", "3.11", str(env)], check=True)
    subprocess.run([uv, "pip", "install", "-q", "-p", str(env / "bin" / "python"), *PEER_ENVS[name]], check=True)
    marker.write_text(wanted)
    return env / "bin"


ERA = {"mode": "legacy"}  # the client's protocol era: legacy (handshake) or 2026-07-28 (--era)


async def tool_named(target: object) -> str:
    async with Client(target, mode=ERA["mode"]) as client:
        return next(t.name for t in (await client.list_tools()).tools if t.name.endswith("echo"))


async def run_clients(target: object, tool: str, clients: int, per_client: int) -> dict:
    """Every client connects and makes a warm-up call first; the clock starts once all are ready."""
    latencies: list[float] = []
    ready, go = [0], anyio.Event()
    started = [0.0]

    async def worker() -> None:
        async with Client(target, mode=ERA["mode"]) as client:
            await client.call_tool(tool, {"message": "warm"})
            ready[0] += 1
            if ready[0] == clients:
                started[0], cpu[0] = time.perf_counter(), client_cpu()
                go.set()
            await go.wait()
            for i in range(per_client):
                t0 = time.perf_counter()
                result = await client.call_tool(tool, {"message": f"hello {i}"})
                latencies.append(time.perf_counter() - t0)
                assert not result.is_error, result
            finished.append(time.perf_counter())
            if len(finished) == clients:
                cpu[1] = client_cpu()

    finished: list[float] = []
    cpu = [0.0, 0.0]  # this process's CPU when the clock starts and when the last client is done
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(worker)
    return {
        **summarize(latencies, max(finished) - started[0]),
        "client_cpu_ms": (cpu[1] - cpu[0]) / len(latencies) * 1000,
    }


def group_cpu(root: int | None) -> float:
    """CPU seconds used so far by a process and its live descendants (a proxy and the upstream it started)."""
    if root is None:
        return 0.0
    stats: dict[int, tuple[int, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    tree, total, grew = {root}, 0.0, True
    while grew:
        grown = {pid for pid, (ppid, _) in stats.items() if ppid in tree} - tree
        tree |= grown
        grew = bool(grown)
    return sum(precise_cpu(pid, stats[pid][1]) for pid in tree if pid in stats) + total


def precise_cpu(pid: int, ticks: float | None = None) -> float:
    """CPU seconds of a process (all its threads) from the kernel's scheduler clock, in nanoseconds: /proc's
    utime+stime count in clock ticks (10 ms), so a turn of a few hundred calls read from them is off by up to
    two ticks, several percent of it. Linux names a process's CPU clock by its pid (clockid (~pid << 3) | 2,
    CPUCLOCK_SCHED). `ticks`: what to return if the clock cannot be read (the process has ended)."""
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        if ticks is None:
            raise
        return ticks


Row = tuple[str, float, float, "float | None", float]  # path, p50 ms, calls/s, server CPU ms/call, client CPU ms/call


def client_cpu() -> float:
    """CPU seconds of this process: the SDK clients all run in it."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Target:
    """One row: where its clients connect, the serving process (for its CPU), and what it measured so far."""

    def __init__(self, name: str, target: object, proc: subprocess.Popen | None = None) -> None:
        self.name, self.target, self.proc = name, target, proc
        self.tool: str | None = None
        self.seq: list[float] = []
        self.conc: list[float] = []
        self.clients_cpu: list[float] = []
        self.server_cpu = 0.0
        self.calls = 0
        self.failed = False

    def measure_round(self, args: argparse.Namespace) -> None:
        """One round: p50 of the sequential calls, calls/s and client CPU of the concurrent ones. A row
        that fails (a peer that cannot speak the era) is reported once and left out of later rounds."""
        if self.failed:
            return
        root = self.proc.pid if self.proc else None
        try:
            if self.tool is None:
                self.tool = anyio.run(tool_named, self.target)
            before = group_cpu(root)
            self.seq.append(anyio.run(run_clients, self.target, self.tool, 1, args.seq)["p50_ms"])
            concurrent = anyio.run(run_clients, self.target, self.tool, args.clients, args.per_client)
            self.server_cpu += group_cpu(root) - before
        except Exception as exc:  # noqa: BLE001 - one failing row must not end the run
            while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the task group's: say what failed inside
                exc = exc.exceptions[0]
            print(f"{self.name}: failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
            self.failed = True
            return
        self.conc.append(concurrent["calls_s"])
        self.clients_cpu.append(concurrent["client_cpu_ms"])
        self.calls += args.seq + 1 + args.clients * (args.per_client + 1)

    def row(self) -> Row:
        if not self.conc:
            return self.name, float("nan"), float("nan"), None, float("nan")
        cpu = self.server_cpu / self.calls * 1000 if self.proc else None
        return (
            self.name,
            statistics.median(self.seq),
            statistics.median(self.conc),
            cpu,
            statistics.median(self.clients_cpu),
        )

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


def rounds(targets: list[Target], args: argparse.Namespace) -> None:
    for number in range(args.repeats):
        print(f"round {number + 1} of {args.repeats}: {len(targets)} rows", file=sys.stderr)
        for target in targets:
            target.measure_round(args)


def serve(cmd: list[str], url: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.Popen:
    log = tempfile.TemporaryFile()  # not a pipe: a chatty server must never block on it
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True, env={**os.environ, **(env or {})}
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise SystemExit(f"{' '.join(cmd[:3])} ... exited ({proc.returncode}): {log.read().decode()[-500:]}")
        try:
            httpx.get(url, timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    stop(proc)
    raise SystemExit(f"{url} did not come up")


def start_gateway(name: str, config: Path, cassettes: Path, extra: list[str], env: dict[str, str]) -> Target:
    port = free_port()
    proc = serve(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
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
        env,
    )
    base = f"http://127.0.0.1:{port}"
    wait_gateway(base, extra)
    return Target(name, base + "/mcp", proc)


def wait_gateway(base: str, extra: list[str]) -> None:
    """Until the gateway at `base` serves its server `up` and, with `--workers N`, every worker is up."""
    wait_ready(base, "up", timeout=180)
    if "--workers" in extra:  # every worker up (each /status is a new connection, dealt to the next worker)
        count, seen, deadline = int(extra[extra.index("--workers") + 1]), set(), time.monotonic() + 180
        while len(seen) < count and time.monotonic() < deadline:
            seen.add(httpx.get(base + "/status").json()["worker"]["index"])
        time.sleep(1.0)  # let the last one finish starting up


def workload_rows(key: str, args: argparse.Namespace, tmp: Path) -> list[Row]:
    _, command = WORKLOADS[key]
    config = tmp / f"{key}.yaml"
    config.write_text(
        f"version: 1\nservers:\n  up:\n    command: {command[0]}\n    args: {command[1:]!r}\n".replace("'", '"')
    )
    cassettes = tmp / f"{key}-cassettes"

    # The recording comes first, alone: the replay rows replay what it records.
    record = start_gateway("mcpgw record", config, cassettes, ["--mode", "record", "--cassette", "rec"], {})
    try:
        rounds([record], args)
    finally:
        record.stop()

    targets = [Target("direct stdio", StdioServerParameters(command=command[0], args=command[1:]))]
    try:
        if key == "python":
            port = free_port()
            targets.append(
                Target(
                    "an SDK server answering over HTTP itself (the SDK floor)",
                    f"http://127.0.0.1:{port}/mcp",
                    serve(
                        [sys.executable, str(BENCH / "echo_server.py"), "--http", str(port)],
                        f"http://127.0.0.1:{port}/mcp",
                    ),
                )
            )
            port = free_port()
            targets.append(
                Target(
                    NULL_ROW,
                    f"http://127.0.0.1:{port}/mcp",
                    serve([sys.executable, str(BENCH / "null_server.py"), str(port)], f"http://127.0.0.1:{port}/mcp"),
                )
            )
        proxies = [
            (
                "naive SDK proxy (JSON answers)",
                lambda port: [sys.executable, str(BENCH / "naive_proxy.py"), str(port), *command],
            )
        ]
        if not args.skip_peers:
            proxies += [
                (
                    "mcp-proxy 0.13 (sparfenyuk)",
                    lambda port: [
                        str(peer_env("mcp-proxy") / "mcp-proxy"),
                        "--port",
                        str(port),
                        "--host",
                        "127.0.0.1",
                        "--log-level",
                        "WARNING",
                        "--",
                        *command,
                    ],
                ),
                (
                    "FastMCP 4.1.2 proxy (JSON answers)",
                    lambda port: [
                        str(peer_env("fastmcp") / "python"),
                        str(BENCH / "peers" / "fastmcp_proxy.py"),
                        str(port),
                        *command,
                    ],
                ),
            ]
        for name, cmd in proxies:
            port = free_port()
            targets.append(
                Target(name, f"http://127.0.0.1:{port}/mcp", serve(cmd(port), f"http://127.0.0.1:{port}/mcp"))
            )
        setups = [
            ("mcpgw live (validation + call log)", ["--mode", "live", "--cassette", "live-log"], {}),
            (
                "mcpgw live, fast path off",
                ["--mode", "live", "--cassette", "live-log-slow"],
                {"MCPGW_FAST_PATH": "off"},
            ),
            ("mcpgw replay", ["--mode", "replay", "--cassette", "rec", "--log-cassette", "replay-log"], {}),
            (
                "mcpgw replay, fast path off",
                ["--mode", "replay", "--cassette", "rec", "--log-cassette", "replay-log-slow"],
                {"MCPGW_FAST_PATH": "off"},
            ),
        ]
        for workers in args.workers:
            setups.append(
                (
                    f"mcpgw replay --workers {workers}",
                    [
                        "--mode",
                        "replay",
                        "--cassette",
                        "rec",
                        "--log-cassette",
                        f"replay-log-w{workers}",
                        "--workers",
                        str(workers),
                    ],
                    {},
                )
            )
        for name, extra, env in setups:
            targets.append(start_gateway(name, config, cassettes, extra, env))
        rounds(targets, args)
    finally:
        for target in targets:
            target.stop()
    rows = [target.row() for target in targets]
    return (
        rows[: -len(setups) + 2] + [record.row()] + rows[-len(setups) + 2 :]
    )  # record beside the live rows, as before


NULL_ROW = "a null HTTP server (canned answers, no MCP work): the client's own floor"


def verdicts(rows: list[Row]) -> list[str]:
    by = {name: (p50, rate) for name, p50, rate, _, _ in rows}
    cpu = {name: c for name, _, _, c, _ in rows}
    clients = {name: c for name, _, _, _, c in rows}
    peers = [by[n] for n in by if n.startswith(("naive", "mcp-proxy", "FastMCP"))]
    out = []
    live = by.get("mcpgw live (validation + call log)")
    if peers and live:
        best_p50, best_rate = min(p for p, _ in peers), max(r for _, r in peers)
        out.append(
            f"live: p50 {live[0] / best_p50:.2f}x the best peer's (target <= 0.8x); "
            f"calls/s {live[1] / best_rate:.2f}x the best peer's (target >= 1.5x)"
        )
        peer_cpu = [c for n, c in cpu.items() if n.startswith(("naive", "mcp-proxy", "FastMCP")) and c]
        if peer_cpu and cpu.get("mcpgw live (validation + call log)"):
            out.append(
                f"live: server-side CPU per call {cpu['mcpgw live (validation + call log)'] / min(peer_cpu):.2f}x "
                "the most frugal peer's"
            )
    floor = next((v for n, v in by.items() if n.startswith("an SDK server")), None)
    replay = by.get("mcpgw replay")
    if floor and replay:
        out.append(
            f"replay: p50 {replay[0] / floor[0]:.2f}x the SDK floor's (target <= 0.6x); "
            f"calls/s {replay[1] / floor[1]:.2f}x (target >= 2x)"
        )
        floor_cpu = next((c for n, c in cpu.items() if n.startswith("an SDK server")), None)
        if floor_cpu and cpu.get("mcpgw replay"):
            out.append(f"replay: server-side CPU per call {cpu['mcpgw replay'] / floor_cpu:.2f}x the SDK floor's")
        null = by.get(NULL_ROW)
        if null:  # no server can answer faster than one that does nothing
            out.append(
                f"replay: even the null server gives p50 {null[0] / floor[0]:.2f}x and calls/s {null[1] / floor[1]:.2f}x "
                "the SDK floor's: no server can do better with this client on this machine"
            )
        # The clients share one process (one core): whatever the server, they cannot call faster than their own CPU allows.
        own = clients.get("mcpgw replay")
        if own and own == own:
            out.append(
                f"replay: the SDK clients' own CPU is {own:.2f} ms per call, so they cannot exceed {1000 / own:.0f} "
                f"calls/s against any server; 2x the SDK floor would be {2 * floor[1]:.0f} calls/s"
            )
    for name, (p50, rate) in by.items():
        if "--workers" in name and replay:
            workers = int(name.rsplit(" ", 1)[1])
            out.append(
                f"{name}: calls/s {rate / replay[1]:.2f}x one process (target >= {1 + 0.8 * (min(workers, os.cpu_count() or 1) - 1):.1f}x)"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seq", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=100)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--skip-peers", action="store_true", help="only the rows that need no peer environment")
    parser.add_argument("--workers", type=int, nargs="*", default=[2], help="replay rows with --workers N")
    parser.add_argument("--era", choices=("legacy", "2026-07-28"), default="legacy", help="the clients' protocol era")
    args = parser.parse_args()
    ERA["mode"] = args.era
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-peers-"))
    began = datetime.now(UTC)
    table = {key: workload_rows(key, args, tmp) for key in args.workloads}
    ended = datetime.now(UTC)
    print(
        f"\nmeasured {began:%Y-%m-%d %H:%M}-{ended:%H:%M} UTC on {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.1f}); SDK client, era {args.era}; {args.seq} sequential calls, {args.clients} clients x "
        f"{args.per_client}; medians of {args.repeats}\n"
    )
    print(
        "| workload | path | seq p50 ms | conc calls/s | server CPU ms/call | client CPU ms/call |\n|---|---|---|---|---|---|"
    )
    for key, rows in table.items():
        for number, (name, p50, rate, cpu, own) in enumerate(rows):
            shown = f"{cpu:.2f}" if cpu is not None else "-"
            print(
                f"| {WORKLOADS[key][0] if number == 0 else ''} | {name} | {p50:.2f} | {rate:.0f} | {shown} | {own:.2f} |"
            )
    for key, rows in table.items():
        for line in verdicts(rows):
            print(f"{WORKLOADS[key][0]}: {line}")


if __name__ == "__main__":
    main()
