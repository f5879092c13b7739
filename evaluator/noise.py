"""`mcpgw eval --noise LIVE FROZEN`: how much of the run-to-run spread the environment adds.

LIVE: the tasks repeated with the tools live; FROZEN: the same tasks repeated with the tools replayed
(the model live in both). Per metric, the spread over repeats is each task's sample variance over its
repeats (an outcome counts 1 for pass, 0 for fail), averaged over the tasks both sides ran. What the
frozen environment removes is the environment's share of the spread:

    share = (mean live variance - mean frozen variance) / mean live variance

with a bootstrap interval over tasks (each task's pair of variances resampled together; a draw with no
live spread at all, where the share is undefined, is left out). Per task, the
tool answers that differed between live repeats: the same tool called with the same arguments in two or
more repeats, answered with different result digests (and, as a check, how many differed between the frozen
repeats: none, when every repeat replays one recording).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mcpgw.evaluator import stability


def variances(row: Mapping[str, Any]) -> dict[str, float]:
    """One task's variance over repeats, per metric and outcome (those with two repeats or more)."""
    out = {}
    for name, metric in row["metrics"].items():
        if metric["sd"] is not None:
            out[name] = metric["sd"] ** 2
    for name, outcome in row["outcomes"].items():
        sd = stability.stdev([float(v) for v in outcome["values"]])
        if sd is not None:
            out[name] = sd**2
    return out


def _share(pairs: Sequence[tuple[float, float]]) -> float | None:
    """None when the live repeats never differ: no spread for the environment to have added."""
    live = stability.mean([a for a, _ in pairs])
    return None if live == 0 else (live - stability.mean([b for _, b in pairs])) / live


def noise(
    live: Mapping[str, Any],
    frozen: Mapping[str, Any],
    live_calls: Iterable[Mapping[str, Any]],
    frozen_calls: Iterable[Mapping[str, Any]] = (),
    *,
    level: float,
    resamples: int,
    seed: int,
    names: tuple[str, str],
) -> dict[str, Any]:
    """live, frozen: the two sides' stability sections (one model each, as --compare takes them)."""
    from mcpgw.evaluator.compare import only_model

    left, right = only_model(live, names[0]), only_model(frozen, names[1])
    shared = sorted(set(left["tasks"]) & set(right["tasks"]))
    if not shared:
        raise ValueError(f"--noise: {names[0]} and {names[1]} have no task in common")
    lv = {t: variances(left["tasks"][t]) for t in shared}
    fv = {t: variances(right["tasks"][t]) for t in shared}
    metrics: dict[str, Any] = {}
    for name in sorted({m for t in shared for m in lv[t] if m in fv[t]}):
        pairs = [(lv[t][name], fv[t][name]) for t in shared if name in lv[t] and name in fv[t]]
        live_var = stability.mean([a for a, _ in pairs])
        row: dict[str, Any] = {
            "live_variance": live_var,
            "frozen_variance": stability.mean([b for _, b in pairs]),
            "environment_share": None,
            "low": None,
            "high": None,
            "tasks": len(pairs),
        }
        if live_var > 0:  # no spread live: nothing for the environment to have added
            row["environment_share"] = _share(pairs)
            row["low"], row["high"] = stability.bootstrap_statistic(
                pairs, _share, level=level, resamples=resamples, seed=seed
            )
        metrics[name] = row
    return {
        "live": names[0],
        "frozen": names[1],
        "model": left["model"],
        "ci": level,
        "bootstrap": resamples,
        "seed": seed,
        "shared_tasks": len(shared),
        "metrics": metrics,
        "tasks": {
            t: {
                **differing_answers(left["tasks"][t]["runs"], live_calls),
                "frozen_differed": differing_answers(right["tasks"][t]["runs"], frozen_calls)["differed"],
            }
            for t in shared
        },
    }


def differing_answers(runs: Sequence[str], calls: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The calls repeated across a task's live repeats (same tool, same arguments) and those of them whose
    answers differed (result digests)."""
    mine = set(runs)
    digests: dict[tuple[str, str], set[str]] = {}
    seen_in: dict[tuple[str, str], set[str]] = {}
    for record in calls:
        if record.get("run_id") not in mine or record.get("server") == "@model":
            continue
        key = (str(record.get("exposed_name")), json.dumps(record.get("arguments"), sort_keys=True, default=str))
        seen_in.setdefault(key, set()).add(str(record["run_id"]))
        if record.get("result_digest"):
            digests.setdefault(key, set()).add(str(record["result_digest"]))
    repeated = sorted(k for k, r in seen_in.items() if len(r) > 1)
    differed = [k for k in repeated if len(digests.get(k, ())) > 1]
    return {
        "repeated_calls": len(repeated),
        "differed": len(differed),
        "examples": [f"{tool}({args})" for tool, args in differed[:3]],
    }
