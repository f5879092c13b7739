"""Running every applicable judge over the runs, concurrently and with progress.

One `JudgeRun` holds the client (and through it the recording store) and the
prompt templates. It judges:
- MCP-AgentBench queries: pass/fail per run with an answer;
- MCP-Bench tasks: the shuffled 5-run rubric per run;
- MCPEval tasks: trajectory and completion per (model, task).

A recording miss in offline mode is recorded against its item and the rest
carry on (the report lists the misses); an unreachable endpoint, a missing
key or a broken store stops everything at once, since every other item would
fail the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpgw.evaluator import agentbench
from mcpgw.evaluator.errors import EvaluatorError, JudgeMiss
from mcpgw.evaluator.judges import aspects, outcome, rubric
from mcpgw.evaluator.judges.client import JudgeClient
from mcpgw.evaluator.judges.prompting import Template
from mcpgw.evaluator.judges.trace import estimate_rounds, list_tools, render_calls, render_trace
from mcpgw.evaluator.pipeline import UNKNOWN_MODEL, EvalInputs, Loaded, Progress, RunIndex, predicted_calls

KINDS = ("agentbench", "mcpbench", "mcpeval")
Key = tuple[str, str, str]  # (judge kind, model, run or task id)
Job = Callable[[], Awaitable[dict[str, Any]]]
Planned = tuple[Key, dict[str, Any], Job | None]
NO_ANSWER = "(no final answer was recorded for this run)"


@dataclass
class JudgeRun:
    client: JudgeClient
    templates: dict[str, Template] = field(default_factory=dict)  # kind -> user-supplied original
    rubric_runs: int = rubric.RUNS
    seed: int = 0
    misses: list[str] = field(default_factory=list)

    def run(
        self,
        runs: Mapping[str, list[dict[str, Any]]],
        index: RunIndex,
        loaded: Loaded,
        inputs: EvalInputs,
        progress: Progress,
    ) -> dict[str, Any]:
        return asyncio.run(self._run_all(runs, index, loaded, inputs, progress))

    async def _run_all(self, runs, index, loaded, inputs, progress) -> dict[str, Any]:
        meta: dict[Key, dict[str, Any]] = {}
        jobs: list[tuple[Key, Job]] = []
        for collect in (self._agentbench_jobs, self._mcpbench_jobs, self._mcpeval_jobs):
            for key, info, job in collect(runs, index, loaded, inputs):
                meta[key] = info
                if job is not None:
                    jobs.append((key, job))
        progress.start("judging", len(jobs))
        results: dict[Key, dict[str, Any]] = {}
        limit = asyncio.Semaphore(max(1, self.client.config.concurrency))

        async def one(key: Key, job: Job) -> None:
            async with limit:
                try:
                    results[key] = await job()
                except JudgeMiss as miss:
                    self.misses.append(miss.message)
                    results[key] = {"error": miss.message}
            progress.advance()

        try:
            async with asyncio.TaskGroup() as group:
                for key, job in jobs:
                    group.create_task(one(key, job))
        except ExceptionGroup as failure:
            raise _first_evaluator_error(failure) from None
        finally:
            progress.finish()
            await self.client.aclose()
        return self._assemble(meta, results)

    def _agentbench_jobs(self, runs, index: RunIndex, loaded: Loaded, inputs: EvalInputs) -> Iterator[Planned]:
        for tasks in loaded.agentbench.values():
            for run_id, task_id in sorted(index.task_of.items()):
                task = tasks.get(task_id)
                if task is None:
                    continue
                key = ("agentbench", index.model_of[run_id], run_id)
                info = {"task_id": task_id, "category": task.category}
                answer = inputs.answers.get(run_id)
                if answer is None:  # nothing to judge: counted as unjudged, not as a failure
                    yield key, {**info, "passed": None, "reason": NO_ANSWER}, None
                    continue
                yield (
                    key,
                    info,
                    _bind(
                        outcome.judge_outcome,
                        self.client,
                        task_id=run_id,
                        query=task.query,
                        reference_answer=task.reference_answer,
                        answer=answer.final_answer,
                        template=self.templates.get("agentbench"),
                    ),
                )

    def _mcpbench_jobs(self, runs, index: RunIndex, loaded: Loaded, inputs: EvalInputs) -> Iterator[Planned]:
        for tasks in loaded.mcpbench.values():
            for task in tasks:
                for run_id in index.runs_for(task.task_id):
                    calls = runs.get(run_id, [])
                    answer = inputs.answers.get(run_id)
                    rounds = answer.rounds if answer and answer.rounds is not None else estimate_rounds(calls)
                    values = {
                        "fuzzy_task": task.fuzzy_description,
                        "concrete_task": task.task_description,
                        "dependency_analysis": task.dependency_analysis or "(none given)",
                        "final_answer": answer.final_answer if answer else NO_ANSWER,
                        "rounds": rounds,
                        "trace": render_trace(calls),
                        "tools": list_tools(calls, inputs.catalog),
                    }
                    yield (
                        ("mcpbench", index.model_of[run_id], run_id),
                        {"task_id": task.task_id},
                        _bind(
                            rubric.judge_rubric,
                            self.client,
                            task_id=run_id,
                            values=values,
                            runs=self.rubric_runs,
                            seed=self.seed,
                            template=self.templates.get("mcpbench"),
                        ),
                    )

    def _mcpeval_jobs(self, runs, index: RunIndex, loaded: Loaded, inputs: EvalInputs) -> Iterator[Planned]:
        for truth in loaded.mcpeval.values():
            for model, task_id, calls, response in _mcpeval_cases(runs, index, truth, inputs):
                gt = truth[task_id]
                values = {
                    "task": gt.description or f"(task {task_id}; no description given)",
                    "trajectory": render_calls(calls),
                    "reference_trajectory": render_calls(gt.tool_calls),
                    "response": response or NO_ANSWER,
                    "reference_response": gt.final_response or "(not given)",
                }
                yield (
                    ("mcpeval", model, task_id),
                    {"task_id": task_id},
                    _bind(
                        aspects.judge_trajectory_and_completion,
                        self.client,
                        task_id=f"{model}/{task_id}",
                        values=values,
                        template=self.templates.get("mcpeval"),
                    ),
                )

    def _assemble(self, meta: dict, results: dict) -> dict[str, Any]:
        out: dict[str, Any] = {}
        grouped: dict[str, dict[str, dict[str, dict[str, Any]]]] = {k: {} for k in KINDS}
        for (kind, model, item), info in meta.items():
            grouped[kind].setdefault(model, {})[item] = {**info, **results.get((kind, model, item), {})}
        if grouped["agentbench"]:
            out["agentbench"] = {
                model: {
                    "summary": agentbench.pass_rates((r.get("category"), r.get("passed")) for r in rows.values()),
                    "runs": rows,
                }
                for model, rows in sorted(grouped["agentbench"].items())
            }
        if grouped["mcpbench"]:
            out["mcpbench_judge"] = {
                model: {"runs": rows, "mean": _mean_axes(rows.values())}
                for model, rows in sorted(grouped["mcpbench"].items())
            }
        if grouped["mcpeval"]:
            out["mcpeval_judge"] = {
                model: {"tasks": rows, "mean": _mean_judgements(rows.values())}
                for model, rows in sorted(grouped["mcpeval"].items())
            }
        config = self.client.config
        out["judge"] = {
            "model": config.model,
            "base_url": config.base_url,
            "offline": config.offline,
            "live_calls": self.client.live_calls,
            "replayed": self.client.replayed,
            "attempts": self.client.attempts,
            "misses": sorted(self.misses),
            "prompts": {k: t.origin for k, t in self.templates.items()},
        }
        return out


def _bind(func: Callable[..., Awaitable[dict[str, Any]]], *args: Any, **kwargs: Any) -> Job:
    return lambda: func(*args, **kwargs)


def _mcpeval_cases(runs, index: RunIndex, truth, inputs: EvalInputs):
    """(model, task id, predicted calls, final response) for every prediction of a known task."""
    sets = inputs.prediction_sets or ([inputs.predictions] if inputs.predictions is not None else [])
    if sets:
        chosen = {
            (pred.model or UNKNOWN_MODEL, task_id): pred  # later sources win, as in the matching
            for predictions in sets
            for task_id, pred in predictions.items()
            if task_id in truth
        }
        for (model, task_id), pred in sorted(chosen.items()):
            yield model, task_id, pred.tool_calls, pred.final_response
        return
    for run_id, task_id in sorted(index.task_of.items()):
        if task_id in truth:
            answer = inputs.answers.get(run_id)
            yield (
                index.model_of[run_id],
                task_id,
                predicted_calls(runs.get(run_id, [])),
                answer.final_answer if answer else None,
            )


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _mean_axes(rows) -> dict[str, Any]:
    rows = list(rows)
    mean = {axis: _mean([r.get("axes", {}).get(axis) for r in rows]) for axis in rubric.AXES}
    mean["overall"] = _mean([r.get("overall") for r in rows])
    mean["judged_runs"] = sum(1 for r in rows if r.get("overall") is not None)
    return mean


def _mean_judgements(rows) -> dict[str, Any]:
    rows = list(rows)
    return {
        "trajectory": _mean([r.get("trajectory", {}).get("score") for r in rows]),
        "completion": _mean([r.get("completion", {}).get("score") for r in rows]),
        "tasks": len(rows),
    }


def _first_evaluator_error(group: BaseExceptionGroup) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_evaluator_error(exc)
        if isinstance(exc, EvaluatorError):
            return exc
    return group.exceptions[0]
