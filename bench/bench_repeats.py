"""Time `mcpgw eval` on a call log of repeats (issue 53 item 5): 1,000 tasks x 10 repeats by default.

    python bench/bench_repeats.py [--tasks N] [--repeats K] [--bootstrap N]

Each run calls one tool (the right one with the task's success chance: 0.2, 0.5 or 0.9) and has an answer;
MCPEval ground truth names the right call, so every run gets MCP-Bench's rates, MCPEval's strict and flexible
scores and complete success, and the stability section adds per-task spread, pass@k / pass^k for k = 1..K,
flips and one bootstrap interval per aggregate. Printed: the whole evaluation, the stability section alone
(built again from the report's numbers), and the peak memory Python allocated (tracemalloc, in a second pass).

On the shared 2-core machine where it was written (issue 53): 10,000 runs, 1,000 resamples, 51 aggregates:
eval 4-9 s (as loaded), of which the aggregates and intervals 1.5-4 s; peak about 40 MiB.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpgw.evaluator.pipeline import EvalInputs, evaluate  # noqa: E402
from mcpgw.evaluator.tasks import Answer  # noqa: E402


def inputs(tasks: int, repeats: int, resamples: int, truth_file: Path) -> EvalInputs:
    rng = random.Random(0)
    calls, answers = [], {}
    for t in range(tasks):
        chance = rng.choice((0.2, 0.5, 0.9))
        for i in range(repeats):
            run_id = f"react/t{t}#{i}"
            tool = "convert" if rng.random() < chance else "guess"
            calls.append(
                {
                    "run_id": run_id,
                    "exposed_name": f"u__{tool}",
                    "server": "u",
                    "tool": tool,
                    "arguments": {"v": t},
                    "known_tool": True,
                    "outcome": "ok",
                    "is_error": False,
                    "validation": {"valid": True, "errors": []},
                    "seq": len(calls),
                }
            )
            answers[run_id] = Answer(run_id, f"t{t}", "m", "x")
    right = [{"tool_name": "convert", "tool_parameters": {"v": t}} for t in range(tasks)]
    truth_file.write_text(
        "".join(json.dumps({"task_id": f"t{t}", "tool_calls": [right[t]]}) + "\n" for t in range(tasks))
    )
    return EvalInputs(
        calls=calls,
        answers=answers,
        task_files=[str(truth_file)],
        call_log_given=True,
        bootstrap=resamples,
        provenance=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        given = inputs(args.tasks, args.repeats, args.bootstrap, Path(folder) / "truth.jsonl")
        started = time.perf_counter()
        report = evaluate(given)
        elapsed = time.perf_counter() - started
        tracemalloc.start()  # a second pass for the memory: tracing slows Python down several times
        evaluate(given)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    section = report["stability"]["models"]["m"]
    print(
        f"{args.tasks:,} tasks x {args.repeats} repeats = {len(given.calls):,} runs, {args.bootstrap:,} resamples: "
        f"eval {elapsed:.1f} s, peak {peak / 2**20:.0f} MiB traced; {len(section['aggregates'])} aggregates"
    )
    from mcpgw.evaluator import repeats

    started = time.perf_counter()
    repeats.aggregates(section["tasks"], 0.95, args.bootstrap, 0)
    print(f"the aggregates and their intervals alone: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
