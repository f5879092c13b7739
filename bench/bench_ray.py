"""`mcpgw run --ray` replay: the same N-task replay (default 200) on a Ray cluster of one node
and of two nodes of one CPU each, on this machine, in interleaved rounds; beside them the same
replay without Ray (one gateway, one task at a time), for scale.

Per layout: the whole command's wall time (connect, a gateway per node, the tasks, the merge),
the tasks' span (first submission to last answer), tasks per second over that span, and Ray's
overhead per task: from the driver's submission to the task's first gateway call (median and
90th percentile; queueing behind busy nodes included, so it grows with the tasks waiting).

    python bench/bench_ray.py [--tasks 200] [--rounds 2]

Needs the ray extra, the local profile's servers (uvx) to record once, and the MCP-Bench
archive in ../shared/mcp-bench (as the run tests do).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.runs.ray_cluster import ConversationModel, local_cluster, many_tasks, mcpgw_run, record_args, script  # noqa: E402


def single_tasks(folder: Path) -> Path:
    import tarfile

    root = Path(__file__).resolve().parents[1]
    archives = sorted((root.parent / "shared" / "mcp-bench").glob("*.tar.gz")) or sorted(
        Path("/work/shared/mcp-bench").glob("*.tar.gz")
    )
    if not archives:
        sys.exit("bench_ray: no MCP-Bench archive in ../shared/mcp-bench")
    with tarfile.open(archives[0]) as archive:
        member = next(
            m for m in archive.getmembers() if m.name.endswith("tasks/mcpbench_tasks_single_runner_format.json")
        )
        out = folder / "single.json"
        out.write_bytes(archive.extractfile(member).read())
    return out


def manifest(cassette: Path) -> dict:
    from mcpgw.cassette.cassette import Cassette
    from mcpgw.runs.manifest import KIND

    opened = Cassette(cassette, create=False, readonly=True)
    try:
        return [r for r in opened.runs() if r.get("kind") == KIND][-1]
    finally:
        opened.close()


def replay(tasks: Path, folder: Path, cassettes: Path, name: str, *more: str) -> dict:
    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    started = time.perf_counter()
    done = mcpgw_run(
        tasks,
        folder / f"{name}.jsonl",
        cassettes,
        "--mode",
        "replay",
        "--cassette",
        "rec",
        "--log-cassette",
        name,
        "--concurrency",
        "1",
        *more,
        env=offline,
        timeout=3600,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"bench_ray: {name} failed: {done.stderr[-2000:]}")
    timings = manifest(cassettes / name)["timings"]
    overheads = sorted(t["ray_overhead_s"] for t in timings.values() if "ray_overhead_s" in t)
    # The tasks' span: the driver's manifest has the run's start and end; the tasks' own elapsed sum says the work.
    m = manifest(cassettes / name)
    return {
        "wall": wall,
        "span": m["ended"] - m["started"],
        "work": sum(t["elapsed_s"] for t in timings.values()),
        "overhead_p50": statistics.median(overheads) if overheads else None,
        "overhead_p90": overheads[int(0.9 * (len(overheads) - 1))] if overheads else None,
        "nodes": len({t.get("node") for t in timings.values()} - {None}),
        "tasks": len(timings),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        folder = Path(tmp)
        tasks, cassettes = folder / "tasks.json", folder / "cassettes"
        many_tasks(single_tasks(folder), tasks, args.tasks)
        with ConversationModel(script()) as model:  # recorded once, on one machine, without Ray
            recorded = mcpgw_run(
                tasks,
                folder / "rec.jsonl",
                cassettes,
                *record_args(model),
                "--cassette",
                "rec",
                "--concurrency",
                "4",
                timeout=3600,
            )
        if recorded.returncode != 0:
            sys.exit(f"bench_ray: the recording failed: {recorded.stderr[-2000:]}")
        results: dict[str, list[dict]] = {"no Ray": [], "Ray, 1 node": [], "Ray, 2 nodes": []}
        with contextlib.ExitStack() as stack:
            one = stack.enter_context(local_cluster(1))
            two = stack.enter_context(local_cluster(2))
            layouts = {"no Ray": (), "Ray, 1 node": ("--ray", one.address), "Ray, 2 nodes": ("--ray", two.address)}
            for r in range(args.rounds):
                order = list(layouts) if r % 2 == 0 else list(reversed(layouts))  # interleaved A/B rounds
                for layout in order:
                    name = f"r{r}-{layout.replace(' ', '').replace(',', '-')}"
                    results[layout].append(replay(tasks, folder, cassettes, name, *layouts[layout]))
                    print(f"  round {r + 1} {layout}: {results[layout][-1]['wall']:.1f}s", file=sys.stderr)
        answers = {(folder / f"{p.name}").read_bytes() for p in folder.glob("r*.jsonl")}
        same = len(answers) == 1 and answers == {(folder / "rec.jsonl").read_bytes()}

    def cell(layout: str, key: str, scale: float = 1.0, fmt: str = "{:.1f}") -> str:
        values = [r[key] for r in results[layout] if r[key] is not None]
        return fmt.format(statistics.median(values) * scale) if values else "-"

    print(
        f"{args.tasks}-task replay, median of {args.rounds} interleaved round(s); answers identical to the recording: {same}"
    )
    print(f"{'':34}" + "".join(f"{layout:>16}" for layout in results))
    rows = [
        ("wall time, whole command (s)", "wall", 1.0, "{:.1f}"),
        ("run span, connect to merge (s)", "span", 1.0, "{:.1f}"),
        ("tasks per second (over the span)", "span", None, ""),
        ("task time, sum over tasks (s)", "work", 1.0, "{:.1f}"),
        ("Ray overhead per task, p50 (ms)", "overhead_p50", 1000.0, "{:.0f}"),
        ("Ray overhead per task, p90 (ms)", "overhead_p90", 1000.0, "{:.0f}"),
        ("nodes that ran tasks", "nodes", 1.0, "{:.0f}"),
    ]
    for label, key, scale, fmt in rows:
        if scale is None:
            cells = [f"{args.tasks / statistics.median(r['span'] for r in results[layout]):.2f}" for layout in results]
        else:
            cells = [cell(layout, key, scale, fmt) for layout in results]
        print(f"{label:34}" + "".join(f"{c:>16}" for c in cells))
    print(json.dumps({k: v for k, v in results.items()}, default=str), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
