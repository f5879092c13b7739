"""Differential fuzzer for mcpgw's replay promise: a replay answer is the live answer, or a refusal.

Oracle: the real filesystem MCP server (@modelcontextprotocol/server-filesystem). For each random
sequence S of tool calls (over 1-3 lanes: a run tagged by header, one tagged by ?run=, untagged
sessions; sessions closed and reopened mid-sequence):

1. record S through a recording gateway (fixed initial state);
2. replay S unchanged: every answer must be exactly the recorded one; then replay S a second
   time with the same run ids (same gateway), compared with the live answers of S;S;
3. mutate S into S' (drop, insert, swap, change an argument, repeat, cut short, copy a call
   another lane made, move a call to another lane, reopen a session);
4. ground truth: S' on a live gateway from the same initial state;
5. replay S' on a fresh replay gateway: each answer must be the live one or a refusal
   (JSON-RPC error -32005 "replay miss"/"replay refused", or an isError result saying so).

Two state layouts (`layout`):
- "isolated": the server has `isolation: run`, root ${RUN_STATE_DIR}: every lane has its own
  fresh, empty directory (the README's "fresh state per run"). Nothing is shared between lanes, so
  the promise must hold for every lane, whatever the cross-lane lookup rules. Sequences of a batch
  use the same relative paths, so keys collide across runs and sequences on purpose.
- "shared": one instance on one directory X (as the lock's own `filesystem` entry: isolation:
  shared); sequence i works under X/s<i>/ (reset to a fixed initial state before recording and
  before the ground truth). Lanes of one sequence share the files, which per-lane keys cannot see:
  wrong answers there on a multi-lane sequence are the cross-lane limitation (classified "shared
  cross-lane"); single-lane tagged sequences must keep the promise.

Volatile fields ignored: get_file_info's created/modified/accessed lines (wall-clock times of
the file: they differ between any two runs by nature); the absolute root directory in texts
(the per-run temporary directory, or X, appears in error messages, diffs and search results);
the random name of write_file's temporary file (`<path>.<32 hex>.tmp`, 16 random bytes) in the
error of a write over a directory.

Options: --hybrid also plays each S' in --mode hybrid (misses go live after catch-up), compared with
the same ground truth; --modern adds untagged 2026-07-28 clients (no session, cookie identity);
--replay-workers N replays with `--workers N`; lanes use /mcp or /servers/filesystem/mcp at random
(and a mutation flips it); --miss-as-tool-error is on for every other batch; --parallel-record P
sends two consecutive calls of a lane at once while recording, with probability P (a planning round):
this finds the known record-time race (a read racing a write is recorded under the key of the state
after the write with the answer of the state before it), so it is off by default.

Usage: python fuzz_replay.py --seed 1 --sequences 40 [--layout isolated|shared] [--budget 600]
         [--hybrid] [--modern] [--replay-workers 2] [--parallel-record 0.5] [--out findings.jsonl]
As a function: `check_replay(seed, n, layout, budget)` fails on a wrong answer. Needs the filesystem server in the npx cache (scripts/fetch-test-servers.sh),
node, and DIFZ_CODE (default: this checkout): the project checkout gateways run from (their cwd).
Cost: ~1-1.5 s per sequence in the shared layout, ~3-5 s isolated (a fresh server per lane per phase),
plus ~10 s of gateway starts per batch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by path (tests/replay/test_replay_differential.py): find replay_fuzz/ beside it
    sys.path.insert(0, str(HERE))

# The fuzzer lives in scripts/replay_fuzz/ (one concept per module); its names stay importable from here.
from replay_fuzz.batch import reset_shared, run_batch, single_tagged  # noqa: E402
from replay_fuzz.comparison import (  # noqa: E402
    ROOTS,
    TEMP_NAME,
    TIME_LINE,
    Finding,
    Report,
    compare,
    hybrid_refusal,
    normalize,
    refusal,
)
from replay_fuzz.driver import check_replay, run_fuzz  # noqa: E402
from replay_fuzz.gateway_process import CODE, EV_INDEX, FS_INDEX, PY, SERVING, Gateway, config_text, start_gateway  # noqa: E402
from replay_fuzz.mcp_client import PROTO, RpcError, Session  # noqa: E402
from replay_fuzz.mutations import mutate  # noqa: E402
from replay_fuzz.runner import Runner, close_all  # noqa: E402
from replay_fuzz.sequences import CONTENTS, DIRS, FILES, LANE_KINDS, MODERN_LANE, PATTERNS, P, gen_sequence, rand_call  # noqa: E402

__all__ = [
    "CODE",
    "CONTENTS",
    "DIRS",
    "EV_INDEX",
    "FILES",
    "FS_INDEX",
    "HERE",
    "LANE_KINDS",
    "MODERN_LANE",
    "P",
    "PATTERNS",
    "PROTO",
    "PY",
    "ROOTS",
    "SERVING",
    "TEMP_NAME",
    "TIME_LINE",
    "Finding",
    "Gateway",
    "Report",
    "RpcError",
    "Runner",
    "Session",
    "check_replay",
    "close_all",
    "compare",
    "config_text",
    "gen_sequence",
    "hybrid_refusal",
    "main",
    "mutate",
    "normalize",
    "rand_call",
    "refusal",
    "reset_shared",
    "run_batch",
    "run_fuzz",
    "single_tagged",
    "start_gateway",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sequences", type=int, default=40)
    ap.add_argument("--layout", choices=["isolated", "shared"], default="isolated")
    ap.add_argument("--budget", type=float, default=900)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--out", default=None, help="write findings (JSON lines) here")
    ap.add_argument("--work", default=None)
    ap.add_argument("--replay-workers", type=int, default=1)
    ap.add_argument("--hybrid", action="store_true", help="also play each S' in --mode hybrid")
    ap.add_argument("--modern", action="store_true", help="lanes may also be untagged 2026-07-28 clients")
    ap.add_argument(
        "--parallel-record",
        type=float,
        default=0.0,
        help="probability that two consecutive calls of a lane are sent at once while recording",
    )
    a = ap.parse_args()
    report = run_fuzz(
        a.seed,
        a.sequences,
        a.layout,
        a.budget,
        a.batch,
        Path(a.work) if a.work else None,
        replay_workers=a.replay_workers,
        hybrid=a.hybrid,
        modern=a.modern,
        parallel_record=a.parallel_record,
    )
    print(
        json.dumps(
            {
                "sequences": report.sequences,
                "calls": report.calls,
                "compared": report.compared,
                "refusals": report.refusals,
                "equal": report.equal,
                "wrong": len(report.wrong),
                "cross_lane": len(report.cross_lane),
                "errors": len(report.errors),
                "seconds": round(report.seconds, 1),
                "rpc_errors_while_recording": report.rpc_errors,
                "by_check": report.by_check,
            }
        )
    )
    if a.out:
        with open(a.out, "w") as fh:
            for f in report.wrong:
                fh.write(json.dumps({"kind": "wrong", **json.loads(f.brief())}) + "\n")
            for f in report.cross_lane:
                fh.write(json.dumps({"kind": "cross_lane", **json.loads(f.brief())}) + "\n")
            for f in report.errors:
                fh.write(json.dumps({"kind": "error", **json.loads(f.brief())}) + "\n")
    sys.exit(1 if report.wrong or report.errors else 0)


if __name__ == "__main__":
    main()
