"""Repeats of one task, recognised in a call log, and their stability section of the report.

How a run is recognised as a repeat: runs are repeats of one another when they share the model and
the task. The task is the answer's `task_id` (answers file, `mcpgw run`'s manifest); a run with no
answer is its own task, named by its run id without a trailing `#<i>` (so `react/t1#0`, `react/t1#1`
... are repeats 0, 1, ... of task `react/t1`). `mcpgw run --repeat K` names its runs that way, and a
harness gets the same by tagging each repeat `?run=<id>%23<i>` (`mcpgw connect --run ID#i`).

Per run, the numbers the evaluator already has: MCP-Bench's per-task rates, MCPEval's strict and
flexible scores (matched per run here: the report's matching keeps one run per task), MCP-Bench's
rubric judge per run (overall and per axis), and MCP-AgentBench's judge verdict (pass/fail); `--success 'METRIC>=X'` turns any of the numbers into a pass/fail outcome too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpgw.evaluator import mcpbench_rules, mcpeval_match, stability

REPEAT = re.compile(r"^(?P<base>.+)#(?P<i>\d+)$")
SCHEME = (
    "runs sharing a model and a task are repeats of it; the task is the answer's task_id, else the run id "
    "without its `#<i>` suffix"
)
_SUCCESS = re.compile(r"^\s*(?P<metric>[\w.:@^-]+)\s*(?P<op>>=|>|<=|<)\s*(?P<x>-?[0-9.]+(?:e-?\d+)?)\s*$")


def task_of_run(run_id: str, answered_task: str | None) -> str:
    if answered_task is not None and answered_task != run_id:
        return answered_task
    match = REPEAT.match(run_id)
    return match.group("base") if match else run_id


def repeat_number(run_id: str) -> int | None:
    match = REPEAT.match(run_id)
    return int(match.group("i")) if match else None


@dataclass(frozen=True)
class SuccessRule:
    """`--success 'METRIC>=X'`: a per-run number made a pass/fail outcome."""

    metric: str
    op: str
    threshold: float

    @property
    def name(self) -> str:
        return f"{self.metric}{self.op}{self.threshold:g}"

    def passed(self, value: float) -> bool:
        ops = {">=": value >= self.threshold, ">": value > self.threshold}
        ops.update({"<=": value <= self.threshold, "<": value < self.threshold})
        return ops[self.op]


def parse_success(spec: str) -> SuccessRule:
    match = _SUCCESS.match(spec)
    if not match:
        raise ValueError(
            f"--success {spec!r}: write METRIC>=X (or >, <=, <), e.g. 'mcpeval.flexible.overall_score>=0.8'"
        )
    return SuccessRule(match.group("metric"), match.group("op"), float(match.group("x")))


def group_runs(task_of: Mapping[str, str], model_of: Mapping[str, str]) -> dict[tuple[str, str], list[str]]:
    """(model, task) -> its runs, in repeat order (then run id); sorted keys, so the output is stable."""
    groups: dict[tuple[str, str], list[str]] = {}
    for run_id in sorted(task_of):
        groups.setdefault((model_of[run_id], task_of_run(run_id, task_of[run_id])), []).append(run_id)
    return {key: sorted(runs, key=_repeat_order) for key, runs in sorted(groups.items())}


def _repeat_order(run_id: str) -> tuple[int, str]:
    number = repeat_number(run_id)
    return (-1 if number is None else number, run_id)


def run_values(
    report: Mapping[str, Any],
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    task_of: Mapping[str, str],
    truth: Mapping[str, Sequence[Mapping[str, Any]]],
    weights: Mapping[str, float] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, bool]]]:
    """Per run: its numbers (metric -> value) and its pass/fail outcomes (outcome -> passed)."""
    numbers: dict[str, dict[str, float]] = {}
    outcomes: dict[str, dict[str, bool]] = {}
    for entry in (report.get("mcpbench_rules") or {}).values():
        for run_id, row in entry.get("tasks", {}).items():
            mine = numbers.setdefault(run_id, {})
            for rate in mcpbench_rules.RATES:
                if row.get(rate) is not None:
                    mine[f"mcpbench.{rate}"] = float(row[rate])
            if row.get("calls") is not None:
                mine["mcpbench.calls"] = float(row["calls"])
    for run_id, task_id in task_of.items():
        if task_id not in truth:
            continue
        predicted = [
            {"tool_name": r.get("tool") or r["exposed_name"], "tool_parameters": _params(r)}
            for r in runs.get(run_id, ())
        ]
        scored = mcpeval_match.match_both(truth[task_id], predicted, weights=weights, thresholds=thresholds)
        for mode in ("strict", "flexible"):
            numbers.setdefault(run_id, {})[f"mcpeval.{mode}.overall_score"] = float(scored[mode]["overall_score"])
            outcomes.setdefault(run_id, {})[f"mcpeval.{mode}.success"] = bool(scored[mode]["success"])
    for entry in (report.get("mcpbench_judge") or {}).values():  # MCP-Bench's rubric: judged per run
        for run_id, row in entry.get("runs", {}).items():
            judged = {f"judge.mcpbench.{axis}": v for axis, v in (row.get("axes") or {}).items()}
            judged["judge.mcpbench.overall"] = row.get("overall")
            numbers.setdefault(run_id, {}).update(
                {k: float(v) for k, v in judged.items() if isinstance(v, (int, float))}
            )
    for entry in (report.get("agentbench") or {}).values():
        for run_id, row in entry.get("runs", {}).items():
            if row.get("passed") is not None:
                outcomes.setdefault(run_id, {})["judge.passed"] = bool(row["passed"])
    return numbers, outcomes


def _params(record: Mapping[str, Any]) -> dict[str, Any]:
    args = record.get("arguments")
    return args if isinstance(args, dict) else {}


def stability_section(
    groups: Mapping[tuple[str, str], Sequence[str]],
    numbers: Mapping[str, Mapping[str, float]],
    outcomes: Mapping[str, Mapping[str, bool]],
    *,
    rules: Sequence[SuccessRule] = (),
    level: float = stability.DEFAULT_CI,
    resamples: int = stability.DEFAULT_BOOTSTRAP,
    seed: int = stability.DEFAULT_SEED,
) -> dict[str, Any]:
    """Per model: per task the repeats' values, mean, spread and outcomes; the aggregates over tasks,
    each with its bootstrap interval."""
    known = sorted({m for values in numbers.values() for m in values})
    for rule in rules:
        if rule.metric not in known:
            raise ValueError(
                f"--success {rule.name}: no run has a number {rule.metric!r}; they have {', '.join(known) or 'none'}"
            )
    models: dict[str, Any] = {}
    for (model, task), run_ids in groups.items():
        tasks = models.setdefault(model, {"tasks": {}})["tasks"]
        tasks[task] = task_row(run_ids, numbers, outcomes, rules)
    for entry in models.values():
        entry["aggregates"] = aggregates(entry["tasks"], level, resamples, seed)
    return {
        "scheme": SCHEME,
        "ci": level,
        "bootstrap": resamples,
        "seed": seed,
        "interval": "percentile bootstrap over tasks",
        "models": models,
    }


def task_row(
    run_ids: Sequence[str],
    numbers: Mapping[str, Mapping[str, float]],
    outcomes: Mapping[str, Mapping[str, bool]],
    rules: Sequence[SuccessRule],
) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for name in sorted({m for r in run_ids for m in numbers.get(r, {})}):
        values = [numbers[r][name] for r in run_ids if name in numbers.get(r, {})]
        metrics[name] = {"values": values, "mean": stability.mean(values), "sd": stability.stdev(values)}
    binary: dict[str, list[bool]] = {}
    for name in sorted({o for r in run_ids for o in outcomes.get(r, {})}):
        binary[name] = [outcomes[r][name] for r in run_ids if name in outcomes.get(r, {})]
    for rule in rules:
        binary[rule.name] = [rule.passed(numbers[r][rule.metric]) for r in run_ids if rule.metric in numbers.get(r, {})]
    return {
        "runs": list(run_ids),
        "metrics": metrics,
        "outcomes": {name: outcome_row(values) for name, values in binary.items() if values},
    }


def outcome_row(values: Sequence[bool]) -> dict[str, Any]:
    n, c = len(values), sum(values)
    return {
        "values": list(values),
        "successes": c,
        "n": n,
        "pass@k": [stability.pass_at_k(n, c, k) for k in range(1, n + 1)],
        "pass^k": [stability.pass_hat_k(n, c, k) for k in range(1, n + 1)],
        "flips": stability.flips(values),
    }


def task_numbers(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per task, every number an aggregate averages: metric means, success rates, pass@k and pass^k
    (k up to the fewest repeats any task of the outcome has), flips (1 or 0)."""
    out: dict[str, dict[str, float]] = {task: {} for task in tasks}
    names = sorted({m for row in tasks.values() for m in row["metrics"]})
    for name in names:
        for task, row in tasks.items():
            if name in row["metrics"]:
                out[task][f"{name} mean"] = row["metrics"][name]["mean"]
    for name in sorted({o for row in tasks.values() for o in row["outcomes"]}):
        having = {t: row["outcomes"][name] for t, row in tasks.items() if name in row["outcomes"]}
        k_max = min(o["n"] for o in having.values())
        for task, o in having.items():
            out[task][f"{name} rate"] = o["successes"] / o["n"]
            for k in range(1, k_max + 1):
                out[task][f"{name} pass@{k}"] = o["pass@k"][k - 1]
                out[task][f"{name} pass^{k}"] = o["pass^k"][k - 1]
            out[task][f"{name} flip share"] = float(o["flips"])
    return out


def aggregates(tasks: Mapping[str, Mapping[str, Any]], level: float, resamples: int, seed: int) -> dict[str, Any]:
    per_task = task_numbers(tasks)
    names = sorted({n for row in per_task.values() for n in row}, key=_aggregate_order)
    by_tasks: dict[tuple[str, ...], list[str]] = {}  # aggregates over the same tasks share their draws
    for name in names:
        by_tasks.setdefault(tuple(t for t, row in per_task.items() if name in row), []).append(name)
    intervals: dict[str, tuple[float, float]] = {}
    for having, group in by_tasks.items():
        columns = {name: [per_task[t][name] for t in having] for name in group}
        intervals.update(stability.bootstrap_means(columns, level=level, resamples=resamples, seed=seed))
    out = {}
    for name in names:
        values = [row[name] for row in per_task.values() if name in row]
        low, high = intervals[name]
        out[name] = {"value": stability.mean(values), "low": low, "high": high, "tasks": len(values)}
    return out


def _aggregate_order(name: str) -> tuple[str, int, str]:
    """pass@2 before pass@10: the number after @ or ^ sorts as a number."""
    match = re.match(r"^(.*pass[@^])(\d+)$", name)
    return (match.group(1), int(match.group(2)), "") if match else (name, 0, "")
