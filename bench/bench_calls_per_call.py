"""Python function calls and stack depth per `tools/call`, counted in the gateway process. Asserts nothing.

    python bench/bench_calls_per_call.py [--calls 500] [--warmup 100] [--rounds 2] [--modes replay live]
                                         [--code DIR] [--stack]

What it counts, for one `tools/call` of bench/echo_server.py's `echo` (as `up__echo`, `--naming prefix`,
`--validate audit`, like bench/bench_cpu_per_call.py), on the normal hot path:
- Python function calls per call: sys.setprofile 'call' events (a coroutine or generator resumed counts again,
  as the interpreter enters its frame again), and, separately, 'c_call' events (builtins and C methods called
  from Python code), over a window of `--calls` sequential calls, divided by `--calls`. What the process does
  besides answering (timers, the call log's commits) within the window is shared among the calls.
- the maximum Python stack depth reached in the window: frames from the bottom of the main thread's stack
  (asyncio.run's caller included) to the deepest frame, so it holds the event loop's own frames too; the
  depth at which the signal found the loop when counting began ("idle") goes to stderr. The depth is tracked
  per 'call'/'return' event and checked by walking f_back whenever a new maximum seems reached (and every
  256th call); the count of checks that disagreed goes to stderr ("depth fixes", expected 0).
Threads: only the main thread (the event loop) is followed from the moment counting starts; threads started
after the gateway's start are counted apart ("threads" columns, expected 0 calls on this path).

How: no gateway module is imported here. Each gateway runs as `python -c WRAPPER serve ...` with the tree's
folder as its cwd and first on sys.path; the wrapper drops the editable install's finder (which would map
`mcpgw.<part>` to the installed checkout's folders whatever the cwd: mcpgw.gateway from one tree under
mcpgw.cli from another), puts the tree's top folder on `mcpgw.__path__` (the parts, gateway/, recorder/,
replay/..., install as mcpgw.<part>), installs SIGUSR1 (start counting) and SIGUSR2 (stop, write JSON to
$CALLS_BENCH_OUT) handlers and calls mcpgw.cli.main(). It reports any mcpgw module loaded from outside the tree.
Per tree and mode: record a cassette of `--warmup + --rounds * --calls` calls ("hello 0", "hello 1", ...) with
that tree's gateway in record mode (the same sequence replays call for call), then start the measured gateway
(replay: `--mode replay --cassette rec --log-cassette log`; live: `--mode live --cassette live-log`), make
`--warmup` calls on one keep-alive HTTP/1.1 connection (http.client, one session), then per round: SIGUSR1,
the next `--calls` sequential calls, SIGUSR2. With `--rounds 2` a round's numbers should repeat within a fraction of a percent.

`--code DIR` adds "before" columns run from the code in DIR (e.g. `mkdir -p /tmp/before &&
git archive REV | tar -x -C /tmp/before`); the "after" columns are this checkout. `--stack` prints the
deepest stack seen per column.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_gateway import free_port, stop, wait_ready  # noqa: E402

PROTOCOL = "2025-11-25"
UPSTREAM = [sys.executable, str(BENCH / "echo_server.py")]

WRAPPER = r"""
import json, os, signal, sys, threading
code = os.environ["CALLS_BENCH_CODE"]
sys.path.insert(0, code)
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
import mcpgw
mcpgw.__path__.append(code)
main_thread = threading.get_ident()
st = {"on": False, "calls": 0, "c_calls": 0, "depth": 0, "max": 0, "idle": 0, "fixes": 0, "checks": 0,
      "stack": [], "t_calls": 0, "t_c_calls": 0, "t_max": 0}

def walk(frame):
    n = 0
    while frame is not None:
        n += 1
        frame = frame.f_back
    return n

def names(frame):
    out = []
    while frame is not None:
        c = frame.f_code
        out.append("%s:%d %s" % ("/".join(c.co_filename.split("/")[-2:]), frame.f_lineno, c.co_qualname))
        frame = frame.f_back
    return out[::-1]

def prof(frame, event, arg):
    if event == "call":
        st["calls"] += 1
        d = st["depth"] + 1
        if d > st["max"] or not st["calls"] & 255:
            st["checks"] += 1
            true = walk(frame)
            if true != d:
                st["fixes"] += 1
                d = true
            if d > st["max"]:
                st["max"] = d
                st["stack"] = names(frame)
        st["depth"] = d
    elif event == "return":
        st["depth"] -= 1
    elif event == "c_call":
        st["c_calls"] += 1

def thread_prof(frame, event, arg):
    if not st["on"]:
        return
    if event == "call":
        st["t_calls"] += 1
        st["t_max"] = max(st["t_max"], walk(frame))
    elif event == "c_call":
        st["t_c_calls"] += 1

def start(signum, frame):
    for k in ("calls", "c_calls", "max", "fixes", "checks", "t_calls", "t_c_calls", "t_max"):
        st[k] = 0
    st["depth"] = walk(sys._getframe())  # this handler's frame: its own 'return' comes first
    st["idle"] = walk(frame)
    st["on"] = True
    sys.setprofile(prof)
    open(os.environ["CALLS_BENCH_OUT"] + ".started", "w").close()

def done(signum, frame):
    sys.setprofile(None)
    st["on"] = False
    out = os.environ["CALLS_BENCH_OUT"]
    foreign = sorted(n for n, m in list(sys.modules.items()) if n.split(".")[0] == "mcpgw"
                     and getattr(m, "__file__", None) and not os.path.realpath(m.__file__).startswith(os.path.realpath(code) + os.sep))
    with open(out + ".tmp", "w") as f:
        json.dump({**st, "foreign": foreign, "mcpgw_file": mcpgw.__file__}, f)
    os.replace(out + ".tmp", out)

threading.setprofile(thread_prof)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, done)
sys.argv[0] = "mcpgw"
import mcpgw.cli
sys.exit(mcpgw.cli.main(sys.argv[1:]))
"""


class Session:
    """One MCP session (handshake era) on one keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench-calls", "version": "0"},
            },
        }
        answer, body = self.post(init)
        if answer.status != 200:
            raise SystemExit(f"initialize: {answer.status} {body[:300]!r}")
        self.headers["mcp-session-id"] = answer.getheader("mcp-session-id")
        self.headers["mcp-protocol-version"] = PROTOCOL
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict) -> tuple[http.client.HTTPResponse, bytes]:
        self.conn.request("POST", "/mcp", json.dumps(message, separators=(",", ":")).encode(), self.headers)
        answer = self.conn.getresponse()
        return answer, answer.read()

    def call(self, i: int) -> None:
        _, body = self.post(
            {
                "jsonrpc": "2.0",
                "id": i + 1,
                "method": "tools/call",
                "params": {"name": "up__echo", "arguments": {"message": f"hello {i}"}},
            }
        )
        if b'"result"' not in body or b'"isError":true' in body:
            raise RuntimeError(f"call {i}: not a result: {body[:300]!r}")

    def close(self) -> None:
        self.conn.close()


def start_gateway(code: Path, config: Path, cassettes: Path, extra: list[str], out: Path):
    port = free_port()
    env = {**os.environ, "CALLS_BENCH_CODE": str(code), "CALLS_BENCH_OUT": str(out)}
    env.pop("PYTHONPATH", None)
    log = tempfile.TemporaryFile()  # not a pipe: a chatty gateway must never block on it
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRAPPER,
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
        cwd=code,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise SystemExit(f"gateway ({code}) exited {proc.returncode}: {log.read().decode()[-1500:]}")
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/healthz")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"gateway ({code}) did not come up")
                time.sleep(0.2)
        wait_ready(f"http://127.0.0.1:{port}", "up", timeout=120)
    except BaseException:
        stop(proc)
        raise
    return proc, port


def wait_file(path: Path, proc, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"no {path.name} from the gateway")
        time.sleep(0.02)


def measure(code: Path, mode: str, tmp: Path, args: argparse.Namespace, tag: str) -> list[dict]:
    """One gateway of `code` in `mode` (after its own recording): the counts of each round."""
    config = tmp / "echo.yaml"
    cassettes = tmp / f"cassettes-{tag}"
    total = args.warmup + args.rounds * args.calls
    proc, port = start_gateway(code, config, cassettes, ["--mode", "record", "--cassette", "rec"], tmp / "unused.json")
    try:
        session = Session(port)
        for i in range(total):
            session.call(i)
        session.close()
    finally:
        stop(proc)
    extra = {
        "replay": ["--mode", "replay", "--cassette", "rec", "--log-cassette", "log"],
        "live": ["--mode", "live", "--cassette", "live-log"],
    }[mode]
    rounds = []
    out = tmp / f"counts-{tag}-{mode}.json"
    proc, port = start_gateway(code, config, cassettes, extra, out)
    try:
        session = Session(port)
        for i in range(args.warmup):
            session.call(i)
        for number in range(args.rounds):
            for stale in (out, Path(f"{out}.started")):
                stale.unlink(missing_ok=True)
            os.kill(proc.pid, signal.SIGUSR1)
            wait_file(Path(f"{out}.started"), proc)
            first = args.warmup + number * args.calls  # a replay answers each recorded call once, in order
            for i in range(first, first + args.calls):
                session.call(i)
            os.kill(proc.pid, signal.SIGUSR2)
            wait_file(out, proc)
            counts = json.loads(out.read_text())
            if counts["foreign"]:
                raise SystemExit(f"{code}: mcpgw modules from outside the tree: {counts['foreign'][:5]}")
            rounds.append(counts)
            print(
                f"{tag} {mode} round {number + 1}: {counts['calls'] / args.calls:.1f} calls/call, "
                f"{counts['c_calls'] / args.calls:.1f} c_calls/call, max depth {counts['max']} "
                f"(idle {counts['idle']}), depth fixes {counts['fixes']} of {counts['checks']} checks, "
                f"threads {counts['t_calls']} calls; mcpgw from {counts['mcpgw_file']}",
                file=sys.stderr,
            )
        session.close()
    finally:
        stop(proc)
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="sequential tools/calls counted per round")
    parser.add_argument("--warmup", type=int, default=100, help="calls before counting starts")
    parser.add_argument("--rounds", type=int, default=2, help="counted windows per gateway")
    parser.add_argument("--modes", nargs="+", default=["replay", "live"], choices=["replay", "live"])
    parser.add_argument("--code", type=Path, help="a folder holding the code before the change")
    parser.add_argument("--stack", action="store_true", help="print the deepest stack of every column")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-calls-"))
    (tmp / "echo.yaml").write_text(
        f"version: 1\nservers:\n  up:\n    command: {UPSTREAM[0]}\n    args: [{UPSTREAM[1]!r}]\n"
    )
    trees = ([("before", args.code.resolve())] if args.code else []) + [("after", ROOT)]
    results: dict[tuple[str, str], list[dict]] = {}
    for mode in args.modes:
        for tag, code in trees:
            results[(tag, mode)] = measure(code, mode, tmp, args, tag)
    report(results, trees, args)


def report(results: dict[tuple[str, str], list[dict]], trees: list[tuple[str, Path]], args: argparse.Namespace) -> None:
    def cell(rounds: list[dict], key: str, per_call: bool) -> str:
        values = [r[key] / args.calls if per_call else r[key] for r in rounds]
        shown = [f"{v:.1f}" if per_call else f"{v:g}" for v in (statistics.median(values), min(values), max(values))]
        return shown[0] + (f" ({shown[1]}-{shown[2]})" if shown[1] != shown[2] else "")

    print(
        f"\nper tools/call of up__echo, {args.calls} sequential calls per round on one connection, "
        f"{args.rounds} rounds (median; the range when rounds differ); gateway's main thread\n"
    )
    print("| mode | measure | " + " | ".join(f"{tag} ({code})" for tag, code in trees) + " |")
    print("|---|---|" + "---|" * len(trees))
    for mode in args.modes:
        for label, key, per_call in (
            ("Python calls ('call' events)", "calls", True),
            ("C calls ('c_call' events)", "c_calls", True),
            ("max stack depth (frames)", "max", False),
            ("calls in other threads", "t_calls", True),
        ):
            cells = [cell(results[(tag, mode)], key, per_call) for tag, _ in trees]
            print(f"| {mode} | {label} | " + " | ".join(cells) + " |")
    if len(trees) == 2:
        for mode in args.modes:
            before, after = (statistics.median(r["calls"] for r in results[(tag, mode)]) for tag, _ in trees)
            print(f"{mode}: Python calls per call after/before = {after / before:.3f}")
    if args.stack:
        for (tag, mode), rounds in results.items():
            print(f"\ndeepest stack, {tag} {mode} ({rounds[-1]['max']} frames, outermost first):")
            for line in rounds[-1]["stack"]:
                print(f"  {line}")


if __name__ == "__main__":
    main()
