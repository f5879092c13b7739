"""`mcpgw eval --compare X Y`: each side evaluated with the same options, then compared (evaluator.compare).

A side is a call log (a .jsonl file) or a cassette (a name in --cassettes-dir, or a path); a cassette
that `mcpgw run` wrote brings its own answers and task files, as `--run` does. --tasks and --answers
given on the command line serve both sides.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from mcpgw.evaluator.errors import EvaluatorError, SourceUnavailable

# `cli` below is evaluator.cli, handed in by its eval command: it imports this module, so this one takes its
# helpers (eval_inputs, _judge, _emit, RUN_KIND) as an argument rather than importing them back (no cycle).


def side_args(args: argparse.Namespace, side: str, cli: ModuleType) -> argparse.Namespace:
    mine = copy.copy(args)
    mine.tasks = list(args.tasks)
    mine.compare = mine.noise = None
    mine.calls = mine.cassette = mine.run = None
    path = Path(side)
    if path.is_file():
        mine.calls = side
        return mine
    folder = path if path.is_dir() else Path(args.cassettes_dir) / side
    if not folder.is_dir():
        raise SourceUnavailable(
            f"--compare {side}: neither a call log (.jsonl) nor a cassette (nor one in {args.cassettes_dir})"
        )
    if (folder / "data.mdb").exists() and _has_runs(folder, cli.RUN_KIND):
        mine.run = str(folder)
    else:
        mine.cassette = side
    return mine


def _has_runs(folder: Path, run_kind: str) -> bool:
    from mcpgw.cassette.cassette import Cassette

    try:
        cassette = Cassette(folder, create=False, readonly=True)
    except Exception:  # noqa: BLE001 - not a cassette we can read: its call log is tried instead, with its own error
        return False
    try:
        return any(r.get("kind") == run_kind for r in cassette.runs())
    finally:
        cassette.close()


def compare_reports(args: argparse.Namespace, cli: ModuleType) -> dict[str, Any]:
    """--compare X Y, or --noise LIVE FROZEN: both sides evaluated alike, then set side by side."""
    from mcpgw.evaluator import compare, noise
    from mcpgw.evaluator.pipeline import evaluate

    started = time.perf_counter()
    x, y = args.compare or args.noise
    sections, calls = {}, {}
    for side in (x, y):
        inputs = cli.eval_inputs(side_args(args, side, cli))
        inputs.stability = True
        inputs.provenance = False  # one section per side is all a comparison reads
        judge = cli._judge(args) if args.judge_model else None
        try:
            sections[side] = evaluate(inputs, judge=judge)["stability"]
        finally:
            if judge is not None and hasattr(judge.client.store, "close"):
                judge.client.store.close()
        calls[side] = inputs.calls
    options = {"level": args.ci, "resamples": args.bootstrap, "seed": args.seed, "names": (x, y)}
    key, result = (
        ("compare", compare.compare(sections[x], sections[y], **options))
        if args.compare
        else ("noise", noise.noise(sections[x], sections[y], calls[x], calls[y], **options))
    )
    return {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        key: result,
        "sides": sections,
        "elapsed_s": round(time.perf_counter() - started, 3),
    }


def compare_command(args: argparse.Namespace, cli: ModuleType) -> int:
    from mcpgw.evaluator.report import print_report, render

    option, pair = ("--compare", args.compare) if args.compare else ("--noise", args.noise)
    if args.compare and args.noise:
        print("mcpgw: --compare and --noise: one at a time", file=sys.stderr)
        return 2
    if pair[0] == pair[1]:
        print(f"mcpgw: {option} {pair[0]} with itself: give two different runs", file=sys.stderr)
        return 2
    try:
        report = compare_reports(args, cli)
        if args.format == "terminal":
            cli._emit(args, None, lambda console: print_report(report, console))
        else:
            cli._emit(args, render(report, args.format))
    except (EvaluatorError, ValueError) as exc:
        print(f"mcpgw: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    return 0
