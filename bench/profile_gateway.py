"""Where the gateway's CPU goes, per path: a cProfile of the gateway process under load.

Records a cassette against server-everything (record mode), then profiles the gateway in
live mode and in replay mode of that cassette while SDK clients call `echo`. Prints, per
path, the gateway's own CPU time by area (SDK, pydantic, HTTP server, gateway, replay, ...)
and the functions that cost most. Asserts nothing.

    python bench/profile_gateway.py [--calls 600] [--clients 4] [--paths live replay]
    MCPGW_FAST_PATH=off python bench/profile_gateway.py   # the same without the fast path
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gateway import UPSTREAM, free_port, measure, start, stop, wait_ready  # noqa: E402

AREAS = [  # first match wins: (area, substring of the function's file)
    ("pydantic", "pydantic"),
    ("sdk: server (lowlevel, runner, session)", "mcp/server/"),
    ("sdk: shared (dispatcher, message)", "mcp/shared/"),
    ("sdk: mcp_types", "mcp_types"),
    ("http: uvicorn/httptools/h11", "uvicorn"),
    ("http: starlette", "starlette"),
    ("anyio", "anyio"),
    ("json", "json/"),
    ("gateway core", "/gateway/"),
    ("replay", "/replay/"),
    ("recorder (cassette, call log)", "/recorder/"),
    ("lmdb/msgpack", "lmdb"),
    ("asyncio/uvloop", "asyncio"),
]


def area_of(filename: str) -> str:
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (C calls: I/O, json, hashing, ...)"
    for area, marker in AREAS:
        if marker in filename:
            return area
    return "other"


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(path: str, profile: Path, calls: int, cpu_s: float) -> None:
    stats = pstats.Stats(str(profile))
    by_area: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        if name == "run" and filename.endswith("runners.py"):
            continue  # the event loop's own frame: its time is mostly waiting for I/O
        by_area[area_of(filename)] += tottime
        rows.append((tottime, ncalls, f"{Path(filename).name}:{line} {name}"))
    total = sum(by_area.values())
    print(
        f"\n== {path}: process CPU {cpu_s / calls * 1e6:.0f} us per call (profiled, with cProfile's overhead: "
        f"{total / calls * 1e6:.0f} us per call; {calls} calls; "
        f"{sum(ncalls for _, ncalls, _ in rows) / calls:.0f} function calls per call, Python and C)"
    )
    for area, seconds in sorted(by_area.items(), key=lambda kv: -kv[1]):
        print(f"  {area:<44}{seconds / calls * 1e6:>8.0f} us/call {100 * seconds / total:>6.1f}%")
    print("  top functions (own time):")
    for tottime, ncalls, where in sorted(rows, reverse=True)[:12]:
        print(f"    {tottime / calls * 1e6:>7.1f} us/call  {ncalls / calls:>5.1f}x  {where}")
    print("  most called (per call):")  # in place, each call is a cold frame: fewer of them is what still pays
    for tottime, ncalls, where in sorted(rows, key=lambda row: -row[1])[:12]:
        print(f"    {ncalls / calls:>5.1f}x  {tottime / calls * 1e6:>7.1f} us/call  {where}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--paths", nargs="+", default=["live", "replay"], choices=["live", "replay"])
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-profile-"))
    config = tmp / "bench.yaml"
    config.write_text(
        f"version: 1\nservers:\n  everything:\n    command: npx\n    args: {UPSTREAM[1:]!r}\n".replace("'", '"')
    )
    modes = {
        "record": ["--mode", "record", "--cassette", "rec"],
        "live": ["--mode", "live", "--cassette", "live-log"],
        "replay": ["--mode", "replay", "--cassette", "rec", "--log-cassette", "replay-log"],
    }
    cpu: dict[str, float] = {}
    for path in ["record", *args.paths]:
        port = free_port()
        profile = tmp / f"{path}.prof"
        entry = ["-m", "mcpgw.cli"] if path == "record" else [str(Path(__file__).with_name("_profiled.py"))]
        os.environ["MCPGW_PROFILE_OUT"] = str(profile)
        gateway = start(
            [
                sys.executable,
                *entry,
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
                *modes[path],
            ]
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, "everything")
            if path == "record":
                anyio.run(measure, base + "/mcp", "everything__echo", args.calls, args.clients)
                continue
            anyio.run(measure, base + "/mcp", "everything__echo", 40, args.clients)  # warm: first-call costs out
            os.kill(gateway.pid, signal.SIGUSR2)
            time.sleep(0.2)
            cpu_before = process_cpu(gateway.pid)
            anyio.run(measure, base + "/mcp", "everything__echo", args.calls, args.clients)
            cpu[path] = process_cpu(gateway.pid) - cpu_before
            if path != "record":
                os.kill(gateway.pid, signal.SIGUSR1)
                deadline = time.monotonic() + 30
                while not profile.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                time.sleep(0.5)  # let the dump finish
        finally:
            stop(gateway)
        if path != "record":
            report(path, profile, args.calls, cpu[path])


if __name__ == "__main__":
    main()
