"""MCPEval's tool-call matching: a ground-truth trajectory against a prediction.

The definitions (evaluator/METRICS.md), with the reference code's quirks kept on purpose
so that numbers agree with it:

- normalisation: strings stripped and lower-cased, also in strict mode; numbers
  and booleans become floats (True == 1.0); lists and dict keys/values recursively.
- tolerances apply to top-level numbers only; inside lists/dicts equality is exact
  after normalisation. Flexible "contains" applies to top-level strings only.
- names are compared position-wise (zip); parameters only where names match.
- missing/extra tools are names absent from the other list (duplicates kept).
- per-position keys are the tool name, or "name_i" when the name occurs more
  than once in the ground truth.
- strict success does not require equal lengths: extra calls to names that are
  in the ground truth do not count as extra tools.
- weights that do not sum to 1 (+-0.001) are replaced by the defaults, with a warning
  (the evaluator's rule); MCPEval's `analyze` command first scales them to sum to 1
  (`analyzer_weights`), which is what the CLI does too.
- `summary_metrics` repeats the summary under the names of MCPEval's analysis
  file (exact_match / flexible_match, tasks_with_matching_tools), to compare side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mcpgw.evaluator import mcpeval_analysis

DEFAULT_WEIGHTS = {"name": 0.4, "params": 0.4, "order": 0.2}
DEFAULT_THRESHOLDS = {"flexible_param": 0.6, "flexible_order": 0.5}
MODES = ("strict", "flexible")


def normalize(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, (int, float)):  # bool is an int: True -> 1.0
        return float(value)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {normalize(k): normalize(v) for k, v in value.items()}
    return value


def values_equal(expected: Any, actual: Any, flexible: bool = False) -> bool:
    a, b = normalize(expected), normalize(actual)
    if isinstance(a, float) and isinstance(b, float):
        if not flexible:
            return abs(a - b) < 1e-6
        if abs(a) < 1.0 or abs(b) < 1.0:
            return abs(a - b) < 0.2
        return abs(a - b) / max(abs(a), abs(b)) < 0.2
    if flexible and isinstance(a, str) and isinstance(b, str) and (a in b or b in a):
        return True
    return a == b


def _important(value: Any) -> bool:
    # Not None and not an empty string/list/dict; note "  " is important (not stripped here).
    return value is not None and (not isinstance(value, (list, dict, str)) or len(value) > 0)


def compare_parameters(
    expected: Mapping[str, Any], actual: Mapping[str, Any], flexible: bool = False
) -> tuple[float, dict[str, tuple[Any, Any]]]:
    """(score, {param: (expected, actual)} for params present in both that differ)."""
    common = [key for key in expected if key in actual]
    mismatches = {
        key: (expected[key], actual[key]) for key in common if not values_equal(expected[key], actual[key], flexible)
    }
    if not flexible:
        matched = len(common) - len(mismatches)
        return (matched / len(expected) if expected else 1.0), mismatches
    important = [key for key in expected if _important(expected[key])]
    if not important:
        return 1.0, mismatches
    credit = 0.0
    for key in important:
        if key in actual:
            credit += 0.5 if key in mismatches else 1.0
    return credit / len(important), mismatches


def lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    # One row of the DP table at a time: O(len(second)) memory.
    previous = [0] * (len(second) + 1)
    for a in first:
        current = [0]
        for j, b in enumerate(second, 1):
            current.append(previous[j - 1] + 1 if a == b else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def resolve_weights(weights: Mapping[str, float] | None) -> tuple[dict[str, float], list[str]]:
    merged = {**DEFAULT_WEIGHTS, **(weights or {})}
    if abs(sum(merged[k] for k in DEFAULT_WEIGHTS) - 1.0) > 0.001:
        return dict(DEFAULT_WEIGHTS), [f"weights {merged} do not sum to 1; the defaults {DEFAULT_WEIGHTS} were used"]
    return {k: merged[k] for k in DEFAULT_WEIGHTS}, []


def match_task(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    *,
    mode: str = "strict",
    weights: Mapping[str, float] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Score one task. Calls are {"tool_name": str, "tool_parameters": dict}."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    flexible = mode == "flexible"
    w, warnings = resolve_weights(weights)
    t = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    gt_names = [c["tool_name"] for c in expected]
    pred_names = [c["tool_name"] for c in actual]
    pred_set, gt_set = set(pred_names), set(gt_names)

    param_matches: dict[str, float] = {}
    param_mismatches: dict[str, dict[str, tuple[Any, Any]]] = {}
    scores: list[float] = []
    name_matches = exact = 0
    for i, (gt_call, pred_call) in enumerate(zip(expected, actual)):
        name = gt_call["tool_name"]
        if name != pred_call["tool_name"]:
            continue
        name_matches += 1
        score, mismatches = compare_parameters(gt_call["tool_parameters"], pred_call["tool_parameters"], flexible)
        scores.append(score)
        key = f"{name}_{i}" if gt_names.count(name) > 1 else name
        param_matches[key] = score
        if mismatches:
            param_mismatches[key] = mismatches
        if score == 1.0:
            exact += 1

    both_empty = not expected and not actual
    name_score = name_matches / len(gt_names) if gt_names else (1.0 if not pred_names else 0.0)
    param_score = sum(scores) / len(scores) if scores else (1.0 if both_empty else 0.0)
    order_score = 1.0 if both_empty else lcs_length(gt_names, pred_names) / max(len(gt_names), 1)
    missing = [n for n in gt_names if n not in pred_set]
    extra = [n for n in pred_names if n not in gt_set]

    if both_empty:
        success = True
    elif flexible:
        success = (
            name_matches == len(expected)
            and all(s >= t["flexible_param"] for s in param_matches.values())
            and order_score >= t["flexible_order"]
        )
    else:
        success = exact == len(expected) and not extra and order_score == 1.0

    return {
        "mode": mode,
        "success": success,
        "tool_name_score": name_score,
        "param_match_score": param_score,
        "order_score": order_score,
        "overall_score": w["name"] * name_score + w["params"] * param_score + w["order"] * order_score,
        "ground_truth_tool_count": len(expected),
        "prediction_tool_count": len(actual),
        "tool_count_match": len(expected) == len(actual),
        "name_only_matches": name_matches,
        "exact_matches": exact,
        "missing_tools": missing,
        "extra_tools": extra,
        "param_matches": param_matches,
        "param_mismatches": param_mismatches,
        "weights": w,
        "thresholds": t,
        "warnings": warnings,
    }


def match_both(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    *,
    weights: Mapping[str, float] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Strict and flexible scores of one task; the lists of differences come from strict."""
    strict = match_task(expected, actual, mode="strict", weights=weights, thresholds=thresholds)
    flexible = match_task(expected, actual, mode="flexible", weights=weights, thresholds=thresholds)
    keys = ("success", "overall_score", "tool_name_score", "param_match_score", "order_score")
    return {
        "strict": {k: strict[k] for k in keys},
        "flexible": {k: flexible[k] for k in keys},
        "counts": {
            k: strict[k]
            for k in (
                "ground_truth_tool_count",
                "prediction_tool_count",
                "tool_count_match",
                "name_only_matches",
                "exact_matches",
            )
        },
        "missing_tools": strict["missing_tools"],
        "extra_tools": strict["extra_tools"],
        "param_mismatches": strict["param_mismatches"],
        "param_matches": strict["param_matches"],
        "weights": strict["weights"],
        "thresholds": strict["thresholds"],
        "warnings": strict["warnings"],
    }


def summarize(results: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Success rates and mean scores over tasks (0.0 for an empty set, as the reference does)."""
    rows = list(results)
    summary: dict[str, Any] = {"total_tasks": len(rows)}
    for mode in MODES:
        part = [r[mode] for r in rows]
        wins = sum(1 for p in part if p["success"])

        def mean(key: str) -> float:
            return sum(p[key] for p in part) / len(part) if part else 0.0

        summary[mode] = {
            "successful_tasks": wins,
            "success_rate": wins / len(part) if part else 0.0,
            "average_score": mean("overall_score"),
            "tool_name_accuracy": mean("tool_name_score"),
            "param_match_accuracy": mean("param_match_score"),
            "order_score": mean("order_score"),
        }
    return summary


def analyzer_weights(weights: Mapping[str, float] | None) -> tuple[dict[str, float], list[str]]:
    """Weights as MCPEval's analyze command passes them on: defaults filled in, then scaled to sum to 1."""
    merged = {**DEFAULT_WEIGHTS, **(weights or {})}
    total = sum(merged.values())
    if abs(total - 1.0) <= 0.001 or total <= 0:
        return merged, []
    scaled = {k: v / total for k, v in merged.items()}
    return scaled, [
        f"weights sum to {total:g}, not 1: scaled to " + ", ".join(f"{k}={v:.3f}" for k, v in scaled.items())
    ]


def analysis_summary(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The summary under MCPEval's analysis-file names (means over tasks, 0 when there are none)."""
    rows = list(tasks.values())
    out: dict[str, Any] = {
        "total_tasks": len(rows),
        "tasks_with_matching_tools": sum(
            1 for r in rows if len(r["missing_tools"]) < r["counts"]["ground_truth_tool_count"]
        ),
    }
    for mode, name in (("strict", "exact_match"), ("flexible", "flexible_match")):
        part = [r[mode] for r in rows]

        def mean(key: str) -> float:
            return sum(p[key] for p in part) / len(part) if part else 0

        out[name] = {
            "tasks_with_complete_success": sum(1 for p in part if p["success"]),
            "average_name_match_score": mean("tool_name_score"),
            "average_param_match_score": mean("param_match_score"),
            "average_order_match_score": mean("order_score"),
            "average_overall_score": mean("overall_score"),
        }
    return out


def match_tasks(
    ground_truth: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    weights: Mapping[str, float] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Task id -> calls on both sides; scored over the ids present in both (as the reference),
    with the ids present on one side only listed instead of silently dropped."""
    shared = [task_id for task_id in ground_truth if task_id in predictions]
    tasks = {
        task_id: match_both(ground_truth[task_id], predictions[task_id], weights=weights, thresholds=thresholds)
        for task_id in shared
    }
    return {
        "summary": summarize(tasks.values()),
        "summary_metrics": analysis_summary(tasks),
        **mcpeval_analysis.analysis(tasks, ground_truth, predictions),  # the analyzer's detail sections
        "tasks": tasks,
        "unpredicted_tasks": [t for t in ground_truth if t not in predictions],
        "unknown_predictions": [t for t in predictions if t not in ground_truth],
    }
