"""`mcpgw eval --compare X Y`: the paired difference (Y - X) of every stability aggregate over the
tasks both sides ran, with a paired bootstrap interval; "above the noise" when the interval leaves 0 out.

Why the paired bootstrap and not a sign test: the aggregates are means of per-task numbers that are
often fractional (pass^k, mean scores, success rates over K repeats); a sign test keeps only which side
is ahead on each task, drops every tie (most tasks, when both sides mostly succeed or mostly fail) and so
has little power. Resampling tasks and keeping each task's pair together keeps the pairing (a hard task
is hard for both), uses the sizes of the differences, and is the same interval the single-side
aggregates use, so the two read alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator import repeats, stability

TEST = "paired bootstrap over tasks (percentile interval of the mean per-task difference Y - X)"


def compare(
    x: Mapping[str, Any], y: Mapping[str, Any], *, level: float, resamples: int, seed: int, names: tuple[str, str]
) -> dict[str, Any]:
    """x, y: the two sides' stability sections (one model each)."""
    left, right = only_model(x, names[0]), only_model(y, names[1])
    xs, ys = repeats.task_numbers(left["tasks"]), repeats.task_numbers(right["tasks"])
    shared = sorted(set(xs) & set(ys))
    if not shared:
        raise ValueError(
            f"--compare: {names[0]} and {names[1]} have no task in common (tasks {_few(xs)} vs {_few(ys)})"
        )
    rows: dict[str, Any] = {}
    aggregate_names = sorted({n for t in shared for n in xs[t] if n in ys[t]}, key=repeats._aggregate_order)
    by_tasks: dict[tuple[str, ...], list[str]] = {}  # aggregates over the same tasks share their draws
    for name in aggregate_names:
        by_tasks.setdefault(tuple(t for t in shared if name in xs[t] and name in ys[t]), []).append(name)
    intervals: dict[str, tuple[float, float]] = {}
    for having, group in by_tasks.items():
        columns = {name: [ys[t][name] - xs[t][name] for t in having] for name in group}
        intervals.update(stability.bootstrap_means(columns, level=level, resamples=resamples, seed=seed))
    for name in aggregate_names:
        pairs = [(xs[t][name], ys[t][name]) for t in shared if name in xs[t] and name in ys[t]]
        diffs = [b - a for a, b in pairs]
        low, high = intervals[name]
        rows[name] = {
            "x": stability.mean([a for a, _ in pairs]),
            "y": stability.mean([b for _, b in pairs]),
            "difference": stability.mean(diffs),
            "low": low,
            "high": high,
            "above_noise": low > 0 or high < 0,
            "tasks": len(pairs),
            "y_ahead": sum(d > 0 for d in diffs),
            "x_ahead": sum(d < 0 for d in diffs),
            "tied": sum(d == 0 for d in diffs),
        }
    return {
        "x": names[0],
        "y": names[1],
        "x_model": left["model"],
        "y_model": right["model"],
        "test": TEST,
        "ci": level,
        "bootstrap": resamples,
        "seed": seed,
        "shared_tasks": len(shared),
        "only_x": sorted(set(xs) - set(ys)),
        "only_y": sorted(set(ys) - set(xs)),
        "aggregates": rows,
    }


def only_model(section: Mapping[str, Any], name: str) -> dict[str, Any]:
    models = section["models"]
    if len(models) != 1:
        raise ValueError(
            f"--compare: {name} holds {len(models)} models ({', '.join(models) or 'none'}); give one model per side"
        )
    ((model, entry),) = models.items()
    return {"model": model, **entry}


def _few(tasks: Mapping[str, Any]) -> str:
    ids = sorted(tasks)
    return ", ".join(ids[:3]) + (" ..." if len(ids) > 3 else "") or "none"
