"""Time the evaluator on 1,000,000 synthetic call records: MCP-Bench rule metrics + per-tool audit.

    python bench/bench_evaluator.py [--records N] [--runs N] [--recheck] [--jsonl]

Records are generated in memory (not timed) with a realistic mix: 60 servers x
5 tools, ~6% invalid arguments with failing keywords, ~1% calls to misspelt
names, isError / timeouts / misses, log-normal latencies. Timed separately:
grouping by run, rule metrics (recorded verdicts), the audit, and with
--recheck the rule metrics re-validating every valid-name call against its
schema (one compiled validator per digest); --jsonl also times reading the
records back from an exported JSONL file.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpgw.evaluator.audit import audit_calls  # noqa: E402
from mcpgw.evaluator.calllog import group_by_run, read_calls  # noqa: E402
from mcpgw.evaluator.mcpbench_rules import score_runs  # noqa: E402
from mcpgw.evaluator.schemas import SchemaChecks  # noqa: E402

KEYWORDS = ("required", "type", "enum", "additionalProperties", "maximum")
OUTCOMES = ("ok",) * 90 + ("tool_error",) * 5 + ("timeout",) * 2 + ("upstream_error",) * 2 + ("miss",)
# Arguments that fail exactly one keyword of the schemas below, so recorded verdicts and a re-check agree.
BAD_ARGUMENTS = {
    "required": {"limit": 3},
    "type": {"query": 5},
    "enum": {"query": "x", "mode": "slow"},
    "additionalProperties": {"query": "x", "page": 2},
    "maximum": {"query": "x", "limit": 999},
}


def catalog(servers: int = 60, tools: int = 5) -> tuple[list[tuple[str, str, str, str]], SchemaChecks]:
    checks = SchemaChecks()
    out = []
    for s in range(servers):
        for t in range(tools):
            schema = {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": 200},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50 + t},
                    "mode": {"enum": ["fast", "full", f"m{s}"]},
                },
                "required": ["query"],
                "additionalProperties": False,
            }
            out.append((f"srv{s}", f"tool_{t}_{s}", f"srv{s}__tool_{t}_{s}", checks.add(schema)))
    return out, checks


def generate(count: int, runs: int, seed: int = 7) -> tuple[list[dict], SchemaChecks]:
    rng = random.Random(seed)
    tools, checks = catalog()
    records = []
    per_run = max(1, count // runs)
    for i in range(count):
        server, tool, exposed, digest = tools[rng.randrange(len(tools))]
        roll = rng.random()
        record = {
            "run_id": f"run-{i // per_run}",
            "session_id": "s",
            "seq": i,
            "started_at": "2025-01-01T00:00:00Z",
            "ended_at": "2025-01-01T00:00:01Z",
            "latency_ms": rng.lognormvariate(3.5, 0.8),
            "client_name": "agent",
            "protocol_version": "2025-06-18",
            "server": server,
            "tool": tool,
            "exposed_name": exposed,
            "arguments": {"query": f"q{i % 997}", "limit": rng.randrange(1, 51)},
            "known_tool": True,
            "validation": {"valid": True, "errors": []},
            "outcome": OUTCOMES[rng.randrange(len(OUTCOMES))],
            "is_error": False,
            "result_digest": "d",
            "cassette_key": None,
            "source": "replay",
            "input_schema_digest": digest,
        }
        if roll < 0.06:
            keyword = KEYWORDS[rng.randrange(len(KEYWORDS))]
            record["validation"] = {"valid": False, "errors": [{"path": "$", "message": "bad", "keyword": keyword}]}
            record["outcome"] = "rejected"
            record["arguments"] = dict(BAD_ARGUMENTS[keyword])
        elif roll < 0.07:
            record.update(
                known_tool=False,
                server=None,
                tool=None,
                outcome="rejected",
                exposed_name=exposed.replace("tool", "tol") if rng.random() < 0.7 else f"made_up_{i % 50}",
            )
        record["is_error"] = record["outcome"] == "tool_error"
        records.append(record)
    return records, checks


def timed(label: str, func, results: dict):
    start = time.perf_counter()
    value = func()
    results[label] = time.perf_counter() - start
    print(f"  {label:<38} {results[label]:7.2f} s", flush=True)
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--recheck", action="store_true", help="also time re-validating arguments against schemas")
    parser.add_argument("--jsonl", action="store_true", help="also time reading the records from JSONL")
    args = parser.parse_args()

    start = time.perf_counter()
    records, checks = generate(args.records, args.runs)
    print(
        f"generated {len(records):,} records over {args.runs:,} runs in {time.perf_counter() - start:.1f} s "
        "(not counted)"
    )
    results: dict[str, float] = {}
    runs = timed("group by run", lambda: group_by_run(records), results)
    rules = timed("MCP-Bench rule metrics", lambda: score_runs(runs), results)
    report = timed("per-tool audit", lambda: audit_calls(records), results)
    total = results["group by run"] + results["MCP-Bench rule metrics"] + results["per-tool audit"]
    print(f"  {'TOTAL rule metrics + audit':<38} {total:7.2f} s   (target < 10 s)")
    print(
        f"  -> valid tool name rate {rules['overall']['valid_tool_name_rate']:.4f}, "
        f"{len(report['tools'])} audit rows, validity {report['totals']['validity']:.4f}"
    )
    if args.recheck:
        again = timed(
            "rule metrics, re-checking schemas", lambda: score_runs(runs, checks=checks, recheck=True), results
        )
        print(
            f"  -> schema compliance {again['overall']['schema_compliance_rate']:.4f} "
            f"(recorded verdicts: {rules['overall']['schema_compliance_rate']:.4f})"
        )
    if args.jsonl:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "calls.jsonl"
            with path.open("w") as handle:
                for record in records:
                    handle.write(json.dumps(record) + "\n")
            timed("read + check JSONL", lambda: sum(1 for _ in read_calls(path)), results)
    return 0 if total < 10.0 else 1


if __name__ == "__main__":
    sys.exit(main())
