#!/usr/bin/env python3
"""Replay's keying and lanes, this tree against a git ref, in interleaved rounds.

    python bench/ab_replay_keying.py --base main [--rounds 5] [--calls 20000]

Runs `bench/bench_replay_keying.py` (CassetteUpstream.request in process) alternately on the
ref's tree (extracted with `git archive`) and on this one, so both see the same machine load,
and prints the median p50 per row and the ratio this/base.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^(?P<label>.+?)\s+(?P<p50>[\d.]+)\s+(?P<p99>[\d.]+)\s+(?P<added>-?[\d.]+)$")


def run(tree: Path, calls: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(tree / "bench" / "bench_replay_keying.py"), "--calls", str(calls)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {}
    for line in out.splitlines()[1:]:
        match = ROW.match(line.strip())
        if match:
            rows[match["label"]] = float(match["p50"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="git ref to compare with (default main)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        samples: dict[str, dict[str, list[float]]] = {"base": {}, "this": {}}
        for _ in range(args.rounds):
            for name, tree in (("base", base), ("this", ROOT)):
                for label, p50 in run(tree, args.calls).items():
                    samples[name].setdefault(label, []).append(p50)
    print(f"{'path (p50 us, median of ' + str(args.rounds) + ' rounds)':<50} {'base':>8} {'this':>8} {'this/base':>10}")
    for label, values in samples["this"].items():
        before, after = statistics.median(samples["base"].get(label, [float("nan")])), statistics.median(values)
        print(f"{label:<50} {before:>8.1f} {after:>8.1f} {after / before:>10.2f}")


if __name__ == "__main__":
    main()
