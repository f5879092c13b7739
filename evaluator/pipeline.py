"""From inputs (call log, task files, answers, predictions, labels) to one report dict.

Runs are the unit: one run id = one agent attempt at one task by one model.
A run's task is its answer's `task_id` (or the run id itself); its model is the
answer's or prediction's `model`, else the client name in the call log.

Which metrics appear depends on what was given:
- call log -> audit, and MCP-Bench rule metrics (per MCP-Bench task file when
  given, else over all runs as one file), per model; runs known only from the
  answers are tasks with zero calls, scored as MCP-Bench scores them;
- a benchmark harness's own result files (`results`): MCP-Bench per-task
  results are re-scored with MCP-Bench's rules (one task file per results file)
  and compared with the evaluation they carry; MCPEval evaluation results are
  predictions for the matching;
- MCPEval ground truth -> matching against --predictions or the call log;
- MCP-AgentBench queries + answers + judge -> pass rates per category;
- MCP-Bench tasks + judge -> the rubric; MCPEval + judge -> trajectory/completion;
- human labels + pass/fail verdicts -> agreement.

The report is plain JSON-ready data; the renderers in `report_*` only read it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpgw.evaluator import (
    agreement,
    audit,
    mcpbench_results,
    mcpbench_rules,
    mcpeval_crosscheck,
    mcpeval_match,
    names,
    provenance,
    repeats,
)
from mcpgw.evaluator import catalog as catalog_mod
from mcpgw.evaluator.calllog import group_by_run
from mcpgw.evaluator.results_files import load_results, result_kind, summary_checks
from mcpgw.evaluator.schemas import SchemaChecks
from mcpgw.evaluator.tasks import (
    AgentBenchTask,
    Answer,
    McpBenchTask,
    McpEvalTask,
    detect_kind,
    read_agentbench_tasks,
    read_mcpbench_tasks,
    read_mcpeval_tasks,
)

UNKNOWN_MODEL = "unknown"


class Progress:
    """What the pipeline tells a progress display; the default shows nothing."""

    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, steps: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass
class EvalInputs:
    calls: list[dict[str, Any]] = field(default_factory=list)
    task_files: list[str] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    predictions: dict[str, McpEvalTask] | None = None
    labels: dict[str, list[bool | None]] | None = None
    catalog: list[dict[str, Any]] = field(default_factory=list)
    weights: dict[str, float] | None = None
    thresholds: dict[str, float] = field(default_factory=dict)  # MCPEval's flexible_param / flexible_order
    task_servers_only: bool = False  # MCP-Bench: a valid name must also be on one of the task's servers
    recheck_schemas: bool = False  # re-validate every call against the catalog's schemas, ignoring verdicts
    results: list[str] = field(default_factory=list)  # a harness's own result files (MCP-Bench, MCPEval)
    call_log_given: bool = False  # a call log was given, even an empty one (its runs may have no calls)
    # Every source of MCPEval predictions (--predictions, then MCPEval --results files); filled by evaluate().
    prediction_sets: list[dict[str, McpEvalTask]] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)  # server id -> benchmark name (the lock's titles)
    tasks_by: str = "run"  # what one task is in the call log: a run id, or a run's MCP session (calllog.group_by_run)
    max_simulated_share: float | None = None  # tasks with more simulated answers are marked (evaluator.provenance)
    provenance: bool = True  # False: the second, real-environment pass (no provenance of its own)
    # Repeats (evaluator.repeats): pass/fail rules over per-run numbers, the interval's level, resamples, seed,
    # and whether to add the stability section even when no task was repeated (--compare needs it).
    success_rules: list[Any] = field(default_factory=list)
    ci: float = 0.95
    bootstrap: int = 1000
    seed: int = 0
    stability: bool = False


@dataclass
class Loaded:
    mcpbench: dict[str, list[McpBenchTask]] = field(default_factory=dict)
    mcpeval: dict[str, dict[str, McpEvalTask]] = field(default_factory=dict)
    agentbench: dict[str, dict[str, AgentBenchTask]] = field(default_factory=dict)


def load_task_files(paths: list[str]) -> Loaded:
    loaded = Loaded()
    for path in paths:
        kind = detect_kind(path)
        if kind == "mcpbench":
            loaded.mcpbench[path] = read_mcpbench_tasks(path)
        elif kind == "mcpeval":
            loaded.mcpeval[path] = read_mcpeval_tasks(path)
        else:
            loaded.agentbench[path] = read_agentbench_tasks(path)
    return loaded


@dataclass
class RunIndex:
    """run id -> task id and model; task id -> the runs attempting it."""

    task_of: dict[str, str]
    model_of: dict[str, str]

    @classmethod
    def build(
        cls,
        runs: Mapping[str, list[dict[str, Any]]],
        answers: Mapping[str, Answer],
        predictions: Mapping[str, McpEvalTask] | None,
    ) -> RunIndex:
        task_of, model_of = {}, {}
        for run_id in sorted({*runs, *answers}):  # sorted: the same input gives the same report, whatever the hash seed
            answer = answers.get(run_id)
            task_of[run_id] = answer.task_id if answer else run_id
            model = answer.model if answer else None
            if model is None and predictions and task_of[run_id] in predictions:
                model = predictions[task_of[run_id]].model
            if model is None and runs.get(run_id) and runs[run_id][0].get("client_name"):
                # No run names a model: say so, and which MCP client made the calls (not the client as the model).
                model = f"{UNKNOWN_MODEL} (client {runs[run_id][0]['client_name']})"
            model_of[run_id] = model or UNKNOWN_MODEL
        return cls(task_of, model_of)

    def runs_for(self, task_id: str) -> list[str]:
        return sorted(r for r, t in self.task_of.items() if t == task_id)

    def models(self) -> list[str]:
        return sorted(set(self.model_of.values()))


def answers_from_predictions(predictions: Mapping[str, McpEvalTask]) -> dict[str, Answer]:
    """MCPEval predictions carry final responses: usable as answers when no answers file covers them.
    Their run id is the task id, prefixed with the model when there is one."""
    out = {}
    for task_id, pred in predictions.items():
        run_id = f"{pred.model}/{task_id}" if pred.model else task_id
        out[run_id] = Answer(run_id, task_id, pred.model, pred.final_response or "")
    return out


def _fill_digests(calls: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
    digest_of = {(t["server"], t["tool"]): t.get("input_schema_digest") for t in tools}
    if not any(digest_of.values()):
        return
    for record in calls:
        if record.get("input_schema_digest") is None and record.get("known_tool"):
            digest = digest_of.get((record.get("server"), record.get("tool")))
            if digest:
                record["input_schema_digest"] = digest


def rule_metrics(
    runs: Mapping[str, list[dict[str, Any]]],
    index: RunIndex,
    loaded: Loaded,
    inputs: EvalInputs,
    checks: Any,
    answered: set[str],
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """Per model: MCP-Bench's rule metrics per task file (or one pseudo-file: the call log).
    `answered`: runs of the answers file; those without calls are zero-call tasks."""
    reported = {
        run_id: {"planning_json_compliance": a.planning_json_compliance, "total_rounds": a.rounds}
        for run_id, a in inputs.answers.items()
    }
    out = {}
    for model in index.models():
        mine = [r for r, m in index.model_of.items() if m == model]
        servers_by_run: dict[str, set[str]] = {}
        if loaded.mcpbench:
            files: dict[str, list[str]] = {}
            for path, tasks in loaded.mcpbench.items():
                chosen = []
                for task in tasks:
                    for run_id in index.runs_for(task.task_id):
                        if index.model_of[run_id] == model:
                            chosen.append(run_id)
                            if inputs.task_servers_only:
                                servers_by_run[run_id] = task.available_servers
                if chosen:
                    files[path] = chosen
            if not files:  # said, not skipped silently: an empty comparison looks like "nothing to compare"
                if warnings is not None:
                    warnings.append(_no_task_matched(model, loaded, mine, inputs.tasks_by))
                continue
        else:
            files = {"call log": sorted(r for r in mine if r in runs or r in answered)}
            if not files["call log"]:
                continue
        out[model] = mcpbench_rules.score_runs(
            runs,
            files,
            checks=checks,
            servers_by_run=servers_by_run,
            recheck=inputs.recheck_schemas,
            reported_by_run=reported,
        )
    return out


def _no_task_matched(model: str, loaded: Loaded, runs: list[str], tasks_by: str) -> str:
    task_ids = sorted({t.task_id for tasks in loaded.mcpbench.values() for t in tasks})
    return (
        f"model {model}: none of its {len(runs)} run(s) (by {tasks_by}: {_first_few(sorted(runs))}) has the id of a task "
        f"in {', '.join(loaded.mcpbench)} ({len(task_ids)} task id(s): {_first_few(task_ids)}), so MCP-Bench's rules "
        "over those tasks have nothing to score; without --tasks they score every run of the call log"
    )


def _first_few(ids: list[str], n: int = 3) -> str:
    return ", ".join(repr(i) for i in ids[:n]) + (f", ... ({len(ids) - n} more)" if len(ids) > n else "") or "none"


def merge_rules(rules: dict[str, Any], scored: Mapping[str, dict[str, Any]]) -> None:
    """Add re-scored results files to the call log's rule metrics (same model: files side by side)."""
    for model, entry in scored.items():
        mine = rules.get(model)
        if mine is None:
            rules[model] = entry
            continue
        for key, row in entry["tasks"].items():  # a results task id may equal a call-log run id
            mine["tasks"][key if key not in mine["tasks"] else f"results:{key}"] = row
        mine["files"].update(entry["files"])
        mine.setdefault("disagreements", []).extend(entry["disagreements"])
        mine["overall"] = mcpbench_rules.aggregate_files(mine["files"])


def predicted_calls(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The call log as MCPEval predictions: upstream tool name (or the name as called) + arguments."""
    out = []
    for r in records:
        args = r.get("arguments")
        out.append(
            {"tool_name": r.get("tool") or r["exposed_name"], "tool_parameters": args if isinstance(args, dict) else {}}
        )
    return out


def tool_matching(
    runs: Mapping[str, list[dict[str, Any]]],
    index: RunIndex,
    loaded: Loaded,
    inputs: EvalInputs,
    prediction_sets: list[dict[str, McpEvalTask]],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, truth in loaded.mcpeval.items():
        # Ground truth and predictions may name tools as the agent saw them (server prefix or title).
        gt = {task_id: _bare_calls(task.tool_calls, inputs.titles) for task_id, task in truth.items()}
        by_model: dict[str, dict[str, list[dict[str, Any]]]] = {}
        if prediction_sets:
            for predictions in prediction_sets:  # later files win for the same model and task, as in MCPEval
                for task_id, pred in predictions.items():
                    by_model.setdefault(pred.model or UNKNOWN_MODEL, {})[task_id] = _bare_calls(
                        pred.tool_calls, inputs.titles
                    )
        else:
            for run_id, task_id in index.task_of.items():
                if task_id in gt:
                    by_model.setdefault(index.model_of[run_id], {})[task_id] = predicted_calls(runs.get(run_id, []))
        weights, _ = mcpeval_match.analyzer_weights(inputs.weights)
        out[path] = {
            model: mcpeval_match.match_tasks(gt, preds, weights=weights, thresholds=inputs.thresholds)
            for model, preds in sorted(by_model.items())
        }
    return out


def _bare_calls(calls: list[dict[str, Any]], titles: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{**c, "tool_name": names.bare_tool(c["tool_name"], titles)} for c in calls]


def unmatched_servers(runs: Mapping[str, list[dict[str, Any]]], index: RunIndex, loaded: Loaded) -> str | None:
    """A warning when runs of MCP-Bench tasks made calls but none reached any of their task's servers
    (usually names that do not line up: server ids vs the benchmark's titles)."""
    calls = matched = 0
    seen: set[str] = set()
    wanted: set[str] = set()
    for tasks in loaded.mcpbench.values():
        for task in tasks:
            for run_id in index.runs_for(task.task_id):
                for record in runs.get(run_id, ()):
                    calls += 1
                    server, display = mcpbench_rules._server_of(record)
                    seen.add(str(display or server))
                    wanted |= task.available_servers
                    matched += server in task.available_servers or display in task.available_servers
    if calls and not matched:
        return (
            f"none of the {calls} calls reached a server of its MCP-Bench task: the call log names servers "
            f"{', '.join(sorted(seen)[:5])}; the tasks name {', '.join(sorted(wanted)[:5])}. Give the lock's titles "
            "(eval --run, or serve with the lock's `title:` fields) so names line up; scores against task servers "
            "are meaningless until they do"
        )
    return None


def server_success(audit_report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    servers: dict[str, dict[str, Any]] = {}
    for row in audit_report["tools"]:
        if not row["known"]:
            continue
        s = servers.setdefault(row["server"], {"calls": 0, "ok": 0, "is_error": 0, "invalid": 0, "timeouts": 0})
        for key in ("calls", "ok", "is_error", "invalid", "timeouts"):
            s[key] += row[key]
    for s in servers.values():
        s["success"] = s["ok"] / s["calls"] if s["calls"] else None
    return dict(sorted(servers.items()))


def evaluate(inputs: EvalInputs, *, judge: Any = None, progress: Progress | None = None) -> dict[str, Any]:
    """Compute everything the inputs allow. `judge` is a `judging.JudgeRun` or None."""
    progress = progress or Progress()
    started = time.perf_counter()
    loaded = load_task_files(inputs.task_files)
    results, prediction_sets = load_results(inputs.results)
    if inputs.predictions is not None:
        prediction_sets.insert(0, inputs.predictions)
    inputs.prediction_sets = prediction_sets
    answered = set(inputs.answers)
    runs = group_by_run(inputs.calls, inputs.tasks_by)
    merged = {task_id: pred for predictions in prediction_sets for task_id, pred in predictions.items()}
    if prediction_sets:
        covered = {a.task_id for a in inputs.answers.values()}
        extra = {
            r: a
            for predictions in prediction_sets
            for r, a in answers_from_predictions(predictions).items()
            if a.task_id not in covered
        }
        inputs.answers = {**extra, **inputs.answers}
    index = RunIndex.build(runs, inputs.answers, merged or inputs.predictions)
    checks = catalog_mod.schema_checks(inputs.catalog) if inputs.catalog else SchemaChecks()
    if not inputs.titles:  # the servers in the log are at least their own names
        inputs.titles = {r["server"]: r.get("server_title") or r["server"] for r in inputs.calls if r.get("server")}
    names.add_titles(inputs.calls, inputs.titles)
    if inputs.catalog:
        _fill_digests(inputs.calls, inputs.catalog)
    report: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "inputs": {
            "calls": len(inputs.calls),
            "runs": len(runs),
            "answers": len(inputs.answers),
            "task_files": {p: k for p, k in _kinds(loaded)},
            "catalog_tools": len(inputs.catalog),
            "results": {p: result_kind(p) for p in inputs.results},
        },
        "models": index.models(),
        "warnings": [],
    }
    if inputs.calls:
        report["audit"] = audit.audit_calls(inputs.calls, catalog_mod.names(inputs.catalog))
        report["servers"] = server_success(report["audit"])
    if inputs.calls or inputs.call_log_given:
        report["mcpbench_rules"] = rule_metrics(runs, index, loaded, inputs, checks, answered, report["warnings"])
        unmatched = unmatched_servers(runs, index, loaded)
        if unmatched:
            report["warnings"].append(unmatched)
    if results:
        fallback = mcpbench_results.tools_from_catalog(inputs.catalog) if inputs.catalog else None
        scored = mcpbench_results.score_results(results, checks=checks, fallback_tools=fallback)
        merge_rules(report.setdefault("mcpbench_rules", {}), scored)
        report["models"] = sorted({*report["models"], *scored})
        differ = sum(len(entry["disagreements"]) for entry in scored.values())
        if differ:
            report["warnings"].append(
                f"{differ} re-scored values differ from the evaluation MCP-Bench saved with the "
                "results (mcpbench_rules.<model>.disagreements)"
            )
    summaries = summary_checks(inputs.results, report.get("mcpbench_rules", {}) if inputs.call_log_given else None)
    if summaries:
        report["mcpbench_summary"] = summaries
        report["warnings"] += [
            f"{path}: MCP-Bench's saved {name} differs from the call log's"
            for path, by_model in summaries.items()
            for check in by_model.values()
            for name, row in check.get("fields", {}).items()
            if not row["agrees"]
        ]
    if checks and checks.problems:
        report["warnings"] += [f"schema {d}: {p}" for d, p in checks.problems.items()]
    if loaded.mcpeval:
        report["mcpeval_match"] = tool_matching(runs, index, loaded, inputs, prediction_sets)
        if not prediction_sets:
            report["warnings"] += [
                mcpeval_crosscheck.no_task_runs(p, list(loaded.mcpeval[p]), list(runs))
                for p, by_model in report["mcpeval_match"].items()
                if not by_model
            ]
        report["warnings"] += mcpeval_match.analyzer_weights(inputs.weights)[1]
    if prediction_sets and inputs.call_log_given:
        report["mcpeval_crosscheck"], said = mcpeval_crosscheck.crosscheck(prediction_sets, inputs.calls, inputs.titles)
        report["warnings"] += said
    if judge is not None:
        report.update(judge.run(runs, index, loaded, inputs, progress))
    if loaded.agentbench and judge is None:
        report["warnings"].append(
            "MCP-AgentBench queries were given but no judge (--judge-model): pass rates need the MCP-Eval judge"
        )
    if inputs.labels is not None:
        report["agreement"] = _agreement(report, inputs.labels, index)
    section = stability_report(report, runs, index, loaded, inputs)
    if section is not None:
        report["stability"] = section
    if inputs.calls and inputs.provenance:
        provenance.add_provenance(report, inputs, runs, index, evaluate)
    report["elapsed_s"] = round(time.perf_counter() - started, 3)
    return report


def stability_report(
    report: Mapping[str, Any],
    runs: Mapping[str, list[dict[str, Any]]],
    index: RunIndex,
    loaded: Loaded,
    inputs: EvalInputs,
) -> dict[str, Any] | None:
    """The repeats' section (evaluator.repeats) when a task was run more than once by one model, or when
    asked for (--success, --compare); None otherwise, so a report of single runs is unchanged."""
    groups = repeats.group_runs(index.task_of, index.model_of)
    if not (inputs.stability or inputs.success_rules or any(len(r) > 1 for r in groups.values())):
        return None
    truth = {
        task_id: _bare_calls(task.tool_calls, inputs.titles)
        for tasks in loaded.mcpeval.values()
        for task_id, task in tasks.items()
    }
    weights, _ = mcpeval_match.analyzer_weights(inputs.weights)
    numbers, outcomes = repeats.run_values(report, runs, index.task_of, truth, weights, inputs.thresholds)
    return repeats.stability_section(
        groups,
        numbers,
        outcomes,
        rules=inputs.success_rules,
        level=inputs.ci,
        resamples=inputs.bootstrap,
        seed=inputs.seed,
    )


def _kinds(loaded: Loaded) -> list[tuple[str, str]]:
    return (
        [(p, "mcpbench") for p in loaded.mcpbench]
        + [(p, "mcpeval") for p in loaded.mcpeval]
        + [(p, "agentbench") for p in loaded.agentbench]
    )


def _agreement(report: Mapping[str, Any], labels: Mapping[str, list[bool | None]], index: RunIndex) -> dict[str, Any]:
    """Judge pass/fail verdicts vs human labels. A label id may be a run id or, when only one
    run attempted that task, a task id."""
    verdicts: dict[str, bool | None] = {}
    for per_model in report.get("agentbench", {}).values():
        for run_id, row in per_model["runs"].items():
            verdicts[run_id] = row.get("passed")
    by_label: dict[str, bool | None] = {}
    for item in labels:
        if item in verdicts:
            by_label[item] = verdicts[item]
        else:
            candidates = [r for r in index.runs_for(item) if r in verdicts]
            if len(candidates) == 1:
                by_label[item] = verdicts[candidates[0]]
    return agreement.judge_vs_humans(by_label, labels)
