"""Where a replayed call's CPU goes in place, by function: Linux perf on Python 3.12+'s perf trampolines. Asserts nothing.

    python bench/perf_self_times.py --python /path/to/py312-venv/bin/python [--calls 6000] [--frequency 1500] [--top 40]

py-spy's stacks came out garbled on the project's Python 3.11 (samples pairing callers with functions they never
call), so bench/sample_gateway.py's shares are approximate. From 3.12, CPython can put a trampoline frame named
`py::<function>:<file>` on the native stack for every Python call (PYTHONPERFSUPPORT=1), which `perf` sees. This
records a replaying gateway run by `--python` (an interpreter of 3.12 or later with the project installed, e.g.
`python3.12 -m venv /tmp/v312 && /tmp/v312/bin/pip install -e .`) while 8 plain httpx sessions call `echo`
(bench_cpu_per_call's load), with `perf record --call-graph dwarf`. Unwinding stops at the first trampoline, so
each sample is charged to the innermost Python function on its stack together with the C and kernel work it
called: self times, not inclusive ones. Printed: the functions holding the most samples, and what ran outside
any Python function (the event loop's own C, the kernel's socket work). Needs `perf` and the right to use it.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_cpu_per_call import UPSTREAM, _session  # noqa: E402
from bench_gateway import free_port, stop  # noqa: E402
from compare_peers import serve, wait_gateway  # noqa: E402
from raw_load import load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True, help="a Python 3.12+ with this project installed")
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--frequency", type=int, default=1500, help="samples per second")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("perf_self_times: `perf` is not installed (linux-perf / linux-tools)")
    version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version_info >= (3, 12))"], capture_output=True, text=True
    )
    if version.stdout.strip() != "True":
        sys.exit(f"perf_self_times: {args.python} is not Python 3.12 or later (perf trampolines came in 3.12)")
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-perf-"))
    config = tmp / "echo.yaml"
    config.write_text(f"version: 1\nservers:\n  up:\n    command: {UPSTREAM[0]}\n    args: [{UPSTREAM[1]!r}]\n")

    def gateway(extra: list[str]) -> tuple[str, object]:
        port = free_port()
        proc = serve(
            [
                args.python,
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
                str(tmp / "cassettes"),
                "--validate",
                "audit",
                *extra,
            ],
            f"http://127.0.0.1:{port}/healthz",
            env={"PYTHONPERFSUPPORT": "1"},
            cwd=BENCH.parent,
        )
        wait_gateway(f"http://127.0.0.1:{port}", extra)
        return f"http://127.0.0.1:{port}/mcp", proc

    per_client = args.calls // args.clients
    url, proc = gateway(["--mode", "record", "--cassette", "rec"])
    try:
        load(url, "up__echo", 1, per_client + 100)
    finally:
        stop(proc)
    url, proc = gateway(["--mode", "replay", "--cassette", "rec", "--log-cassette", "log"])
    data = tmp / "perf.data"
    try:
        asyncio.run(_drive(url, args.clients, per_client, proc.pid, data, args.frequency))
    finally:
        stop(proc)
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym"], capture_output=True, text=True)
    _report(script.stdout, args.top)
    shutil.rmtree(tmp, ignore_errors=True)


async def _drive(url: str, clients: int, per_client: int, pid: int, data: Path, frequency: int) -> None:
    sessions = [httpx.AsyncClient(timeout=60) for _ in range(clients)]
    heads = await asyncio.gather(*(_session(c, url) for c in sessions))

    async def calls(client: httpx.AsyncClient, head: dict[str, str], first: int, last: int) -> None:
        for i in range(first, last):  # "hello 0".. as recorded, so every call is a hit
            body = {
                "jsonrpc": "2.0",
                "id": i + 1,
                "method": "tools/call",
                "params": {"name": "up__echo", "arguments": {"message": f"hello {i}"}},
            }
            answer = await client.post(url, json=body, headers=head)
            if b'"result"' not in answer.content:
                raise RuntimeError(f"{url}: {answer.status_code} {answer.text[:200]}")

    try:
        await asyncio.gather(*(calls(c, h, 0, 50) for c, h in zip(sessions, heads)))  # warm up
        perf = subprocess.Popen(
            ["perf", "record", "-F", str(frequency), "--call-graph", "dwarf,8192", "-o", str(data), "-p", str(pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1)  # perf attached before the measured calls
        await asyncio.gather(*(calls(c, h, 50, 50 + per_client) for c, h in zip(sessions, heads)))
        perf.send_signal(2)
        perf.wait(60)
    finally:
        await asyncio.gather(*(c.aclose() for c in sessions))


def _report(script: str, top: int) -> None:
    """Each sample's innermost `py::` frame (its Python function), else its leaf symbol (no Python on the stack)."""
    python: collections.Counter[str] = collections.Counter()
    native: collections.Counter[str] = collections.Counter()
    samples = 0
    for block in script.split("\n\n"):
        symbols = [line.strip().split(None, 1)[-1] for line in block.strip().splitlines() if line.strip()]
        if not symbols:
            continue
        samples += 1
        frame = next((s for s in symbols if s.startswith("py::")), None)
        if frame is None:
            native[symbols[0]] += 1
        else:
            function, _, where = frame.removeprefix("py::").partition(":")
            python[f"{function} ({Path(where).name})"] += 1
    if not samples:
        sys.exit("perf_self_times: perf recorded no samples (is perf allowed here? see perf_event_paranoid)")
    inside = sum(python.values())
    print(
        f"\n{samples} samples; {100 * inside / samples:.0f}% inside a Python function, "
        f"{len(python)} functions\n\n| function (self, with the C and kernel work it called) | share |\n|---|---|"
    )
    for name, count in python.most_common(top):
        print(f"| {name} | {100 * count / samples:.2f}% |")
    print("\n| outside any Python function (leaf symbol) | share |\n|---|---|")
    for name, count in native.most_common(10):
        print(f"| {name} | {100 * count / samples:.2f}% |")


if __name__ == "__main__":
    main()
