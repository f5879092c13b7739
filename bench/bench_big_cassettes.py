"""Time and peak memory of the cassette commands on big cassettes (issue 54 item 3).

    python bench/bench_big_cassettes.py [--sizes 10k,100k[,1m]] [--dir DIR] [--keep] [--only show,export,...]

For each size N it makes a cassette of N call records and N matching exchanges with the product's own writer
(CassetteStore, in batches of BATCH records a commit), copying the shipped cassette's catalogs and lock entries
and cycling through its recorded exchanges and call records: each run id (a "lane") of 40 calls gets its own
request keys, so the cassette has N distinct exchanges, as N calls recorded by N/40 runs would. Then, each in a
fresh child process, it runs

    cassette show    mcpgw cassette show NAME --json
    calls export     mcpgw calls export NAME -o FILE
    eval             mcpgw eval --cassette NAME --json -o FILE
    audit            mcpgw audit --cassette NAME --json -o FILE
    replay ready     mcpgw serve --mode replay --cassette NAME --port 0, until /readyz answers 200

and prints wall time, CPU time (the child's own: a busy machine stretches the wall time much more) and peak
memory per size and command. Memory columns: `peak RSS` is the child's
VmHWM (at its exit; for the gateway, when it is ready), which counts the pages of the memory-mapped
LMDB file the process touched (page cache, given back under pressure); `peak anon` is the largest RssAnon seen
by polling /proc every 20 ms: the process's own heap, what grows when a command builds lists of records.
The last lines give the slope between the two largest sizes: CPU ms and MB per 1,000 records.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpgw.cassette.record_numbers import seq_key  # noqa: E402
from mcpgw.cassette.store import CassetteStore  # noqa: E402

SHIPPED = ROOT / "cassettes" / "default"
BATCH = 20_000  # records a commit while making a cassette
CALLS_PER_RUN = 40
COMMANDS = ("show", "export", "eval", "audit", "replay")


def parse_size(text: str) -> int:
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def templates() -> tuple[dict[str, Any], list[tuple[bytes, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The shipped cassette's info, catalogs, tools/call exchanges and call records (the latter two paired)."""
    store = CassetteStore(SHIPPED, create=False, readonly=True)
    try:
        info = store.get("meta", b"info") or {}
        catalogs = list(store.items("catalog"))
        exchanges = {e["key"]: e for _, e in store.items("exchanges") if e.get("method") == "tools/call"}
        calls = [c for _, c in store.items("calls") if c.get("cassette_key") in exchanges]
    finally:
        store.close()
    return info, catalogs, [exchanges[c["cassette_key"]] for c in calls], calls


def records(size: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """`size` (exchange, call record) pairs: runs of CALLS_PER_RUN calls, each run with its own request keys."""
    _, _, exchanges, calls = templates()
    for i in range(size):
        exchange, call = exchanges[i % len(exchanges)], calls[i % len(calls)]
        run = f"run-{i // CALLS_PER_RUN:07d}"
        key = hashlib.blake2b(f"{exchange['key']}/{run}/{i}".encode(), digest_size=16).hexdigest()
        yield (
            {**exchange, "key": key, "base": key, "lane": run},
            {**call, "run_id": run, "lane": run, "session_id": f"session-{run}", "seq": i + 1, "cassette_key": key},
        )


def make_cassette(path: Path, size: int) -> float:
    """Write a cassette of `size` calls and exchanges; seconds taken."""
    started = time.perf_counter()
    info, catalogs, _, _ = templates()
    store = CassetteStore(path, create=True)
    store.put_many([("meta", b"info", info), *(("catalog", key, value) for key, value in catalogs)])
    batch: list[tuple[str, bytes, Any]] = []
    for i, (exchange, call) in enumerate(records(size), start=1):
        batch += [("exchanges", seq_key(i), {**exchange, "seq": i}), ("calls", seq_key(i), call)]
        if len(batch) >= BATCH:
            store.put_many(batch)
            batch = []
    if batch:
        store.put_many(batch)
    store.close()
    return time.perf_counter() - started


class Peaks:
    """Poll a process's /proc status: the largest RssAnon seen, and its VmHWM."""

    def __init__(self, pid: int) -> None:
        self.pid, self.anon_kb, self.hwm_kb = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        try:
            text = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name == "RssAnon":
                self.anon_kb = max(self.anon_kb, int(value.split()[0]))
            elif name == "VmHWM":
                self.hwm_kb = max(self.hwm_kb, int(value.split()[0]))

    def _poll(self) -> None:
        while not self._stop.wait(0.02):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# The child's own VmHWM, written when it exits: ru_maxrss would also count the pages of this process it was
# forked from (Linux keeps the larger of the two across exec).
_REPORT_PEAK = (
    "import atexit, os, runpy, sys\n"
    "def peak():\n"
    "    text = open('/proc/self/status').read()\n"
    "    kb = next(line.split()[1] for line in text.splitlines() if line.startswith('VmHWM:'))\n"
    "    os.write(int(os.environ['BENCH_PEAK_FD']), kb.encode())\n"
    "atexit.register(peak)\n"
    "sys.argv[0] = 'mcpgw'\n"
    "runpy.run_module('mcpgw', run_name='__main__')\n"
)


def mcpgw() -> list[str]:
    return [sys.executable, "-c", _REPORT_PEAK]


def run_command(argv: list[str], cwd: Path) -> tuple[float, float, int, int]:
    """Seconds, CPU seconds, peak RSS (KiB, the child's VmHWM at exit) and peak RssAnon (KiB) of one command run to its end."""
    read_end, write_end = os.pipe()
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(write_end,),
        env={**os.environ, "BENCH_PEAK_FD": str(write_end)},
    )
    os.close(write_end)
    peaks = Peaks(proc.pid)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)  # its own CPU time: a busy machine stretches the wall time, not this
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    peaks.stop()
    with os.fdopen(read_end, "rb") as told:
        hwm = int(told.read() or 0)
    if proc.returncode not in (0, 1):  # eval/audit exit 1 when a threshold fails; anything else is a failure
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{err.decode(errors='replace')[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, hwm, peaks.anon_kb


def run_replay(cassette: Path, cwd: Path) -> tuple[float, float, int, int]:
    """A gateway replaying `cassette`: seconds until /readyz answers 200, its CPU seconds, VmHWM and peak RssAnon
    then."""
    argv = [*mcpgw(), "serve", "--mode", "replay", "--cassette", str(cassette), "--port", "0"]
    argv += ["--cassettes-dir", str(cassette.parent)]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks = Peaks(proc.pid)
    port = _port_from(proc)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise SystemExit("the replay gateway was not ready in 900 s")
        elapsed = time.perf_counter() - started
        peaks.sample()
        return elapsed, _cpu_seconds(proc.pid), peaks.hwm_kb, peaks.anon_kb
    finally:
        peaks.stop()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _port_from(proc: subprocess.Popen[str]) -> int:
    """The port a gateway started with --port 0 says it listens on (stderr); its stderr is drained after."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        for word in line.replace("/", " ").split():
            if word.startswith("127.0.0.1:") and word.split(":")[1].isdigit():
                threading.Thread(target=proc.stderr.read, daemon=True).start()
                return int(word.split(":")[1])
    raise SystemExit("the gateway exited before saying its port:\n" + "".join(seen[-30:]))


def measure(command: str, cassette: Path, scratch: Path) -> tuple[float, float, int, int]:
    name, folder = cassette.name, ["--cassettes-dir", str(cassette.parent)]
    if command == "replay":
        return run_replay(cassette, scratch)
    argv = {
        "show": ["cassette", "show", name, "--json", *folder],
        "export": ["calls", "export", name, "-o", str(scratch / "calls.jsonl"), *folder],
        "eval": ["eval", "--cassette", name, "--json", "-o", str(scratch / "eval.json"), *folder],
        "audit": ["audit", "--cassette", name, "--json", "-o", str(scratch / "audit.json"), *folder],
    }[command]
    return run_command([*mcpgw(), *argv], scratch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10k,100k", help="cassette sizes, comma-separated (e.g. 10k,100k,1m)")
    parser.add_argument("--only", default=",".join(COMMANDS), help=f"commands to run, of {','.join(COMMANDS)}")
    parser.add_argument("--dir", help="where to make the cassettes (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the cassettes (reused by a later run with --dir)")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    commands = [c for c in args.only.split(",") if c]
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        parser.error(f"unknown command(s) {', '.join(sorted(unknown))}; known: {', '.join(COMMANDS)}")
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mcpgw-big-"))
    base.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[int, str, float, float, int, int]] = []
    try:
        for size in sizes:
            cassette = base / f"big-{size}"
            if not (cassette / "data.mdb").exists():
                took = make_cassette(cassette, size)
                mb = (cassette / "data.mdb").stat().st_size / 1e6
                print(
                    f"made {cassette.name}: {size} calls + {size} exchanges, {mb:.0f} MB, in {took:.1f} s", flush=True
                )
            for command in commands:
                with tempfile.TemporaryDirectory(prefix="mcpgw-big-run-") as scratch:
                    seconds, cpu, rss, anon = measure(command, cassette, Path(scratch))
                rows.append((size, command, seconds, cpu, rss, anon))
                print(
                    f"  {size:>9} {command:<8} {seconds:8.2f} s {cpu:8.2f} cpu s {rss / 1024:8.0f} MB rss "
                    f"{anon / 1024:8.0f} MB anon",
                    flush=True,
                )
                shutil.rmtree(cassette / "runs", ignore_errors=True)  # the replay's session log
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    print_table(rows, sizes, commands)
    return 0


def print_table(rows: list[tuple[int, str, float, float, int, int]], sizes: list[int], commands: list[str]) -> None:
    print()
    print(
        f"| {'records':>9} | {'command':<8} | {'wall s':>7} | {'CPU s':>7} | {'peak RSS MB':>11} | {'peak anon MB':>12} |"
    )
    print(f"|{'-' * 11}|{'-' * 10}|{'-' * 9}|{'-' * 9}|{'-' * 13}|{'-' * 14}|")
    for size, command, seconds, cpu, rss, anon in rows:
        print(f"| {size:>9} | {command:<8} | {seconds:7.2f} | {cpu:7.2f} | {rss / 1024:11.0f} | {anon / 1024:12.0f} |")
    if len(sizes) < 2:
        return
    small, big = sorted(sizes)[-2:]
    by = {(size, command): (c, r, a) for size, command, _, c, r, a in rows}
    print(f"\nslope between {small} and {big} records (per 1,000 records):")
    for command in commands:
        (c1, r1, a1), (c2, r2, a2) = by[(small, command)], by[(big, command)]
        per = (big - small) / 1000
        print(
            f"  {command:<8} CPU {(c2 - c1) / per * 1000:8.2f} ms  RSS {(r2 - r1) / 1024 / per:+7.3f} MB  "
            f"anon {(a2 - a1) / 1024 / per:+7.3f} MB"
        )


if __name__ == "__main__":
    raise SystemExit(main())
