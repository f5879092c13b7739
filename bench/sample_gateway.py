"""Where the gateway's time goes, sampled (py-spy) rather than traced: the per-path profile of issue 12.

profile_gateway.py traces every call with cProfile, which multiplies a call's cost by about five and
hides what is not Python (a send, a pipe write). This samples the running gateway instead: py-spy
(fetched with uvx on first use) records only the thread holding the GIL, 500 times a second, while
bench/raw_load.py keeps `--clients` connections busy. Printed per path (live against
server-everything's `echo`, and replay of a cassette recorded from it): the share of samples by
area, and the lines that hold the most. Asserts nothing.

    python bench/sample_gateway.py [--paths live replay] [--seconds 6] [--clients 8] [--code DIR]

`--code DIR` samples the gateway run from the code in DIR (e.g. main before a change, unpacked with
`git archive main | tar -x -C DIR`), so the same areas can be compared before and after.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_gateway import UPSTREAM, free_port, start, stop, wait_ready  # noqa: E402
from raw_load import load  # noqa: E402

AREAS = [  # (area, marker in the sampled line), first match wins
    ("send of the answer to the client", "write_coalescing.py:"),
    ("pipe write to the upstream", "asyncio/streams.py"),
    ("cassette writer thread", "_write_loop"),
    ("uvicorn/httptools", "uvicorn/"),
    ("starlette", "starlette/"),
    ("pydantic", "pydantic"),
    ("jsonschema (validation)", "jsonschema"),
    ("MCP SDK", "mcp/"),
    ("MCP SDK", "mcp_types"),
    ("gateway: recorder (call log, cassette)", "recorder/"),
    ("gateway: replay", "replay/"),
    ("gateway: hot lane (held at the HTTP protocol, checked, answered)", ("gateway/hot_lane", "gateway/hot_protocol")),
    (
        "gateway: HTTP pipeline (context, guard, sessions, ids, identity, transport, fast path)",
        (
            "gateway/request_context",
            "gateway/http_guard",
            "gateway/json_messages",
            "gateway/sessions",
            "gateway/request_ids",
            "gateway/client_identity",
            "gateway/per_server",
            "gateway/transport",
            "gateway/fast_path",
            "gateway/adaptive_http",
            "gateway/sdk_adapter",
            "gateway/pipeline",
            "gateway/stopping",
            "gateway/http_errors",
        ),
    ),
    ("gateway: core", "gateway/"),
    ("json/msgpack", "json/"),
    ("json/msgpack", "msgpack"),
    ("anyio/sniffio", "anyio/"),
    ("anyio/sniffio", "sniffio"),
    ("event loop", "asyncio/"),
]


def sample(pid: int, seconds: float, out: Path) -> None:
    uvx = shutil.which("uvx") or str(Path(sys.executable).with_name("uvx"))
    subprocess.run(
        [
            uvx,
            "py-spy",
            "record",
            "--rate",
            "500",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--output",
            str(out),
            "--duration",
            str(int(seconds)),
            "--nonblocking",
            "--gil",
        ],
        check=True,
        capture_output=True,
    )


def keep_busy(url: str, clients: int, calls: int) -> None:
    try:
        load(url, "up__echo", clients, calls)
    except RuntimeError:
        pass  # the gateway was stopped under it once the sampling was done


# The request's way in, outermost first: (label, frame marker). A layer's own cost is its inclusive share
# minus the next one's (what it runs inside); markers of both the old and the new pipeline are listed.
LAYERS = [
    ("uvicorn -> the app", "ProxyHeadersMiddleware.__call__"),
    ("per-server paths (+ request context)", "ServerPaths.__call__"),
    ("HTTP guard (body read and parsed)", "HttpGuard.__call__"),
    ("starlette routing", "Starlette.__call__"),
    ("known servers", "KnownServers.__call__"),
    ("session admission", "SessionAdmission.__call__"),
    ("in-flight ids", "InflightIds.__call__"),
    ("client identity", "ClientIdentity.__call__"),
    ("one-shot per-server calls", "OneShot.__call__"),
    ("adaptive JSON/SSE (before)", "AdaptiveResponses.__call__"),
    ("SDK session manager", "StreamableHTTPASGIApp.__call__"),
    ("SDK transport", "StreamableHTTPServerTransport.handle_request"),
    ("fast path: checks, envelope, send", "FastPath.try_answer"),
    ("server middleware + handler", "FastPath._run"),
    ("router (validation, upstream, call log)", ("Router.call_tool", "ToolCalls.call_tool")),
]

# The hot lane's parts (gateway.endpoints.hot_lane): no chain of layers but a request held in the protocol's reads,
# then answered in a task of its own; inclusive shares (py-spy cuts a resumed task's stack at the
# coroutine it resumes, so a part's share is not always inside its caller's).
HOT_PARTS = [
    ("reads: uvicorn's parser, the head checks, the lane's own checks", "HttpToolsProtocol.data_received"),
    ("the lane's checks (HotLane.prepare)", "HotLane.prepare"),
    ("the answer's task", "HotLaneProtocol._answer"),
    ("the fast path's answer (middleware, handler, result shaping)", "FastPath.answer"),
    ("the router (validation, upstream, call log)", "ToolCalls.call_tool"),
    ("the response written (head + send)", "HotLaneProtocol._respond"),
]


def layer_costs(raw: Path) -> list[tuple[str, float, float]]:
    """(layer, inclusive %, own % = inclusive minus the next present layer's) along the request's way in."""
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for stack, n in _records(raw):
        total += n
        for label, marker in LAYERS:
            if _marks(marker, stack):
                inclusive[label] += n
    present = [(label, 100 * inclusive[label] / max(total, 1)) for label, _ in LAYERS if inclusive[label]]
    return [
        (label, share, share - (present[i + 1][1] if i + 1 < len(present) else 0.0))
        for i, (label, share) in enumerate(present)
    ]


def hot_parts(raw: Path) -> list[tuple[str, float]]:
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for stack, n in _records(raw):
        total += n
        for label, marker in HOT_PARTS:
            if marker in stack:
                counts[label] += n
    return [(label, 100 * counts[label] / max(total, 1)) for label, _ in HOT_PARTS if counts[label]]


def _records(raw: Path) -> list[tuple[str, int]]:
    """py-spy's raw samples (`frame;frame;... count` a line); a line it wrote garbled (seen once: bytes of a
    frame name not UTF-8, or a line cut by the sampler's stop) is skipped rather than failing the summary."""
    records = []
    for record in raw.read_text(errors="replace").splitlines():
        stack, _, count = record.rpartition(" ")
        if count.isdigit() and stack:
            records.append((stack, int(count)))
    return records


def _marks(marker: str | tuple[str, ...], leaf: str) -> bool:
    return any(m in leaf for m in marker) if isinstance(marker, tuple) else marker in leaf


def summarize(path: str, raw: Path) -> None:
    areas: collections.Counter[str] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    modules: collections.Counter[str] = collections.Counter()  # the gateway's own, by file
    total = 0
    for stack, n in _records(raw):
        total += n
        leaf = stack.split(";")[-1]
        areas[next((area for area, marker in AREAS if _marks(marker, leaf)), "other")] += n
        lines[re.sub(r"\s+", " ", leaf)] += n
        own = re.search(r"\((gateway/[a-z_]+\.py):", leaf)
        if own:
            modules[own.group(1)] += n
    print(f"\n== {path}: {total} samples with the GIL held")
    for area, n in areas.most_common():
        print(f"  {100 * n / total:5.1f}%  {area}")
    print(
        "  the gateway's own modules: "
        + ", ".join(f"{m.split('/')[1][:-3]} {100 * n / total:.1f}%" for m, n in modules.most_common(8))
    )
    print("  the request's way in, by layer (inclusive %, own %):")
    for label, share, own in layer_costs(raw):
        print(f"  {share:5.1f}% {own:5.1f}%  {label}")
    hot = hot_parts(raw)
    if hot:
        print("  the hot lane (inclusive %):")
        for label, share in hot:
            print(f"  {share:5.1f}%  {label}")
    print("  lines holding the most samples:")
    for line, n in lines.most_common(10):
        print(f"  {100 * n / total:5.1f}%  {line[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--paths", nargs="+", default=["live", "replay"], choices=["live", "replay"])
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--code", type=Path, help="run the gateway from the code in this folder")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcpgw-sample-"))
    config = tmp / "bench.yaml"
    config.write_text(f"version: 1\nservers:\n  up:\n    command: npx\n    args: {UPSTREAM[1:]!r}\n".replace("'", '"'))
    modes = {
        "record": ["--mode", "record", "--cassette", "rec"],
        "live": ["--mode", "live", "--cassette", "live-log"],
        "replay": ["--mode", "replay", "--cassette", "rec", "--log-cassette", "replay-log"],
    }
    calls = 4000  # per connection: more than the sampling window needs at any speed seen here
    for path in ["record", *args.paths]:
        port = free_port()
        gateway = start(
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
                str(tmp),
                "--validate",
                "audit",
                *modes[path],
            ],
            cwd=args.code,
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            wait_ready(f"http://127.0.0.1:{port}", "up")
            if path == "record":  # the sequence every replayed connection makes
                load(url, "up__echo", 1, calls)
                continue
            load(url, "up__echo", args.clients, 50)  # warm up
            busy = threading.Thread(target=keep_busy, args=(url, args.clients, calls), daemon=True)
            busy.start()
            sample(gateway.pid, args.seconds, tmp / f"{path}.raw")
        finally:
            stop(gateway)
        summarize(path, tmp / f"{path}.raw")


if __name__ == "__main__":
    main()
