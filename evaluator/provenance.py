"""How much of a score rests on the real environment: where each task's tool answers came from.

A replay labels every call record with its answer's source (replay.answer_sources):
recorded, equivalent, live, simulated, missed; logs older than that say "replay" for
the recording and "live" for the server. Per task (run) this counts them; a task with
any simulated answer has its score resting partly on a language model's guess at
what the tool would say, and `--max-simulated-share X` marks the tasks whose share of
simulated answers exceeds X. The pipeline then scores every metric twice: over all
tasks, and over the tasks answered only from the real environment (recorded,
equivalent, live), side by side (`real_environment` in the report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

REAL = ("recorded", "equivalent", "live")
SIMULATED = "simulated"
ORDER = ("recorded", "equivalent", "live", "simulated", "missed")
OLDER_NAMES = {"replay": "recorded"}  # call logs written before the answer sources


def source_of(record: Mapping[str, Any]) -> str | None:
    """A record's answer source; None for a call refused before any server or recording was asked."""
    source = record.get("source")
    if source is None:
        return None
    return OLDER_NAMES.get(source, source)


def provenance(
    runs: Mapping[str, list[dict[str, Any]]], task_of: Mapping[str, str], max_simulated_share: float | None = None
) -> dict[str, Any]:
    tasks: dict[str, dict[str, Any]] = {}
    totals: dict[str, int] = {}
    for run_id in sorted(runs):
        counts: dict[str, int] = {}
        for record in runs[run_id]:
            source = source_of(record)
            if source is not None:
                counts[source] = counts.get(source, 0) + 1
                totals[source] = totals.get(source, 0) + 1
        answered = sum(counts.values())
        share = counts.get(SIMULATED, 0) / answered if answered else 0.0
        tasks[run_id] = {
            "task": task_of.get(run_id, run_id),
            "sources": _ordered(counts),
            "answered": answered,
            "simulated_share": share,
            "over_max": max_simulated_share is not None and share > max_simulated_share,
        }
    answered = sum(totals.values())
    return {
        "tasks": tasks,
        "totals": _ordered(totals),
        "simulated_share": totals.get(SIMULATED, 0) / answered if answered else 0.0,
        "simulated_tasks": sorted(r for r, row in tasks.items() if row["sources"].get(SIMULATED)),
        "over_max": sorted(r for r, row in tasks.items() if row["over_max"]),
        "max_simulated_share": max_simulated_share,
    }


def _ordered(counts: Mapping[str, int]) -> dict[str, int]:
    known = {name: counts[name] for name in ORDER if counts.get(name)}
    return {**known, **{name: n for name, n in sorted(counts.items()) if name not in known}}


# Report sections scored again over the real environment's tasks (the judge's are not: they would ask again).
RESCORED = ("mcpbench_rules", "mcpeval_match", "servers")


def add_provenance(
    report: dict[str, Any],
    inputs: Any,
    runs: Mapping[str, list[dict[str, Any]]],
    index: Any,
    evaluate: Callable[[Any], dict[str, Any]],
) -> None:
    """Where each task's answers came from; with simulated answers, every rescorable metric again over the
    tasks answered from the real environment alone, beside the one over all tasks (`evaluate`: the pipeline's)."""
    found = provenance(runs, index.task_of, inputs.max_simulated_share)
    report["provenance"] = found
    if found["over_max"]:
        report["warnings"].append(
            f"{len(found['over_max'])} task(s) have more than "
            f"{100 * (inputs.max_simulated_share or 0):g}% simulated tool answers: "
            f"{', '.join(found['over_max'][:10])}"
        )
    if not found["simulated_tasks"]:
        return
    dropped = set(found["simulated_tasks"])
    by = inputs.tasks_by
    real = replace(
        inputs,
        calls=[r for r in inputs.calls if _run_key(r, by) not in dropped],
        answers={k: a for k, a in inputs.answers.items() if k not in dropped},
        results=[],
        labels=None,
        provenance=False,
        titles=dict(inputs.titles),
    )
    second = evaluate(real)
    report["real_environment"] = {
        "tasks_left_out": sorted(dropped),
        **{key: second[key] for key in RESCORED if key in second},
    }


def _run_key(record: Mapping[str, Any], by: str) -> str:
    return record["run_id"] if by == "run" else f"{record['run_id']}/{record.get('session_id') or '-'}"
