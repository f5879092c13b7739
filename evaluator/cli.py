"""`eval` and `audit` subcommands, registered into the main CLI by `add_commands`.

Exit status: 0 done; 1 done but something needs attention (an audit threshold
was missed, or judge recordings were missing offline); 2 the inputs or the
judge could not be used (the message says which file, line and field, or which
endpoint). Errors are printed as one line, never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpgw.evaluator.call_log_input import _load_with_status, _reading_status, iter_given_calls
from mcpgw.evaluator.errors import EvaluatorError, InputError, SourceUnavailable

DEFAULT_STORE = "judge-recordings"
RUN_KIND = "agent-run"  # what `mcpgw run` records in its cassette's runs (runs/manifest.py)


if TYPE_CHECKING:  # the pipeline is imported when a command runs, not with this module
    from mcpgw.evaluator.pipeline import Progress
else:
    Progress = object


class _RichProgress(Progress):
    """The pipeline's progress hooks shown as a rich progress bar on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._show = console.is_terminal  # no bar in logs and pipes
        self._task: Any = None

    def start(self, label: str, total: int) -> None:
        if total and self._show:
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)

    def advance(self, steps: int = 1) -> None:
        if self._task is not None:
            self._bar.advance(self._task, steps)

    def finish(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None


def _emit(args: argparse.Namespace, text: str | None, printer: Any = None) -> None:
    """Write rendered text to -o or stdout; terminal output goes through rich (to -o as plain text)."""
    if text is not None:
        if args.output:
            _write(args.output, text)
        else:
            sys.stdout.write(text)
        return
    from rich.console import Console

    from mcpgw.gateway.commandline.console import PIPE_WIDTH, table_console

    if args.output:
        import io

        buffer = io.StringIO()
        printer(Console(file=buffer, width=PIPE_WIDTH, no_color=True))
        _write(args.output, buffer.getvalue())
    else:
        printer(table_console())  # pipes get full-width tables


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(path, None, None, f"cannot write the report: {exc.strerror or exc}") from None


def _parse_weights(spec: str | None) -> dict[str, float] | None:
    if not spec:
        return None
    out = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, value = part.partition("=")
        if name not in ("name", "params", "order"):
            raise ValueError(f"--weights: unknown weight {name!r}; use name, params and order")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {name} needs a number, got {value!r}") from None
    return out


def _thresholds(args: argparse.Namespace) -> dict[str, float]:
    """MCPEval's --param-threshold / --order-threshold under its own names; each a score from 0 to 1."""
    out = {}
    for option, key in (("param_threshold", "flexible_param"), ("order_threshold", "flexible_order")):
        value = getattr(args, option, None)
        if value is None:
            continue
        if not 0 <= value <= 1:
            raise ValueError(f"--{option.replace('_', '-')}: a score from 0 to 1, got {value:g}")
        out[key] = value
    return out


def _templates(specs: list[str]) -> dict[str, Any]:
    """--judge-prompt KIND=FILE for one judge; a bare FILE serves every judge whose placeholders it uses."""
    from mcpgw.evaluator.errors import JudgeConfigError
    from mcpgw.evaluator.judges import aspects, outcome, rubric
    from mcpgw.evaluator.judges.prompting import load_template

    known = {"agentbench": outcome.FIELDS, "mcpbench": rubric.FIELDS, "mcpeval": aspects.FIELDS}
    out = {}
    for spec in specs:
        kind, sep, path = spec.partition("=")
        if sep and kind in known:
            out[kind] = load_template(path, known[kind])
            continue
        matched = False
        for kind, fields in known.items():
            try:
                out[kind] = load_template(spec, fields)
                matched = True
            except JudgeConfigError:
                continue
        if not matched:
            load_template(spec, set().union(*known.values()))  # raises the clear error
    return out


def _share(value: float | None) -> float | None:
    if value is not None and not 0 <= value <= 1:
        raise SourceUnavailable(f"--max-simulated-share {value}: a share between 0 and 1 (0.2 = 20%)")
    return value


def eval_inputs(args: argparse.Namespace) -> Any:
    """The pipeline's inputs from the command line (call log, tasks, answers, options)."""
    from mcpgw.evaluator import repeats, stability
    from mcpgw.evaluator.pipeline import EvalInputs
    from mcpgw.evaluator.tasks import PREDICTION_IDS, read_answers, read_labels, read_mcpeval_tasks

    level = getattr(args, "ci", stability.DEFAULT_CI)
    resamples = getattr(args, "bootstrap", stability.DEFAULT_BOOTSTRAP)
    stability.check_options(level, resamples)
    run = _from_run(args) if args.run else None
    inputs = EvalInputs(
        calls=_load_with_status(args),
        task_files=list(args.tasks),
        answers=read_answers(args.answers) if args.answers else {},
        predictions=read_mcpeval_tasks(args.predictions, PREDICTION_IDS) if args.predictions else None,
        labels=read_labels(args.labels) if args.labels else None,
        weights=_parse_weights(args.weights),
        thresholds=_thresholds(args),
        task_servers_only=args.task_servers_only,
        recheck_schemas=args.recheck_schemas,
        results=list(args.results),
        tasks_by=args.tasks_by,
        call_log_given=bool(args.calls or args.cassette),
        max_simulated_share=_share(getattr(args, "max_simulated_share", None)),
        success_rules=[repeats.parse_success(spec) for spec in getattr(args, "success", None) or ()],
        ci=level,
        bootstrap=resamples,
        seed=getattr(args, "seed", stability.DEFAULT_SEED),
    )
    if run is not None:
        answers, inputs.titles = run
        inputs.answers = {**answers, **inputs.answers}
        inputs.calls = [c for c in inputs.calls if c["run_id"] in inputs.answers]
    if args.tools:
        from mcpgw.evaluator.catalog import read_catalog

        inputs.catalog = read_catalog(args.tools)
    if not (inputs.call_log_given or inputs.task_files or inputs.results):
        raise SourceUnavailable("nothing to evaluate: give --calls/--cassette, --results and/or --tasks")
    return inputs


def eval_command(args: argparse.Namespace) -> int:
    from mcpgw.evaluator.pipeline import evaluate
    from mcpgw.evaluator.report import print_report, render

    if getattr(args, "compare", None) or getattr(args, "noise", None):
        from mcpgw.evaluator.compare_cli import compare_command

        return compare_command(args, sys.modules[__name__])  # its helpers are this module's
    try:
        inputs = eval_inputs(args)
        judge = _judge(args) if args.judge_model else None
        try:
            report = evaluate(inputs, judge=judge, progress=_RichProgress())
        finally:
            if judge is not None and hasattr(judge.client.store, "close"):
                judge.client.store.close()
        for warning in report.get("warnings") or ():
            if warning.startswith("none of the"):
                print(f"warning: {warning}", file=sys.stderr)
        drift = _drift(args)
        if drift is not None:
            report["drift"] = drift
        if args.format == "terminal":
            _emit(args, None, lambda console: print_report(report, console))
        else:
            _emit(args, render(report, args.format))
    except (EvaluatorError, ValueError) as exc:
        print(f"mcpgw: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    misses = (report.get("judge") or {}).get("misses") or []
    if misses:
        print(
            f"warning: {len(misses)} judge exchanges had no recording (offline); their items are unjudged",
            file=sys.stderr,
        )
        return 1
    return 0


def _from_run(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """--run CASSETTE: the call log is the cassette's; task files, answers and titles come from the
    records `mcpgw run` left in it (answers of later runs win)."""
    from mcpgw.evaluator.tasks import Answer

    path = Path(args.run)
    if not (path / "data.mdb").exists():
        path = Path("cassettes") / args.run
    if not (path / "data.mdb").exists():
        raise SourceUnavailable(f"--run {args.run}: no cassette there (nor in cassettes/)")
    from mcpgw.cassette.cassette import Cassette

    try:
        cassette = Cassette(path, create=False, readonly=True)
        try:
            manifests = [r for r in cassette.runs() if r.get("kind") == RUN_KIND]
        finally:
            cassette.close()
    except Exception as exc:  # noqa: BLE001 - the recorder's own errors, mapped here once
        raise SourceUnavailable(f"--run {path}: cannot read the cassette: {exc}") from None
    if not manifests:
        raise SourceUnavailable(
            f"--run {path}: no `mcpgw run` was recorded in this cassette; "
            "give --cassette, --tasks and --answers instead"
        )
    args.cassette = str(path)
    answers: dict[str, Any] = {}
    titles: dict[str, str] = {}
    for manifest in manifests:
        for task_file in manifest.get("tasks") or ():
            if task_file not in args.tasks:
                if not Path(task_file).exists():
                    raise SourceUnavailable(f"--run {path}: task file {task_file} (recorded by the run) is gone")
                args.tasks.append(task_file)
        for a in manifest.get("answers") or ():
            # A resumed run reran a task as a new attempt (run id `<task run>~N`, runs.attempts): the
            # later attempt replaces the earlier one, whose calls then drop out with its run id.
            attempt = a.get("attempt") or 1
            task_run = a["run_id"].removesuffix(f"~{attempt}") if attempt > 1 else a["run_id"]
            answers[task_run] = Answer(
                a["run_id"], a["task_id"], a.get("model"), a.get("final_answer") or "", a.get("rounds")
            )
        titles.update(manifest.get("servers") or {})
    return {a.run_id: a for a in answers.values()}, titles


def _drift(args: argparse.Namespace) -> dict[str, Any] | None:
    """A drift report to show beside the metrics: --drift FILE (from `mcpgw drift -o`), else the
    last drift check stored in --cassette."""
    if getattr(args, "drift", None):
        import json

        try:
            with open(args.drift, encoding="utf-8") as handle:
                drift: dict[str, Any] | None = json.load(handle)
                return drift
        except (OSError, ValueError) as exc:
            raise SourceUnavailable(f"{args.drift}: cannot read the drift report: {exc}") from None
    if not getattr(args, "cassette", None):
        return None
    # First-party imports, not guarded: a failing one used to drop the report's drift section without a word.
    from mcpgw.cassette.cassette import Cassette
    from mcpgw.cassette.paths import existing_cassette
    from mcpgw.cassette.store import CassetteFormatError
    from mcpgw.gateway.errors.tree import GatewayError

    try:  # drift checks are stored with the recording itself
        cassette = Cassette(existing_cassette(Path(args.cassettes_dir), args.cassette), create=False, readonly=True)
    except (CassetteFormatError, GatewayError):
        return None
    try:
        runs = [r for r in cassette.runs() if r.get("kind") == "drift"]
    finally:
        cassette.close()
    return runs[-1] if runs else None


def _judge(args: argparse.Namespace) -> Any:
    from mcpgw.evaluator.judges.client import JudgeClient, JudgeConfig
    from mcpgw.evaluator.judges.store import open_store
    from mcpgw.evaluator.judging import JudgeRun

    if args.judge_runs < 1 or args.judge_concurrency < 1 or args.judge_timeout <= 0 or args.judge_retries < 0:
        raise ValueError(
            "--judge-runs and --judge-concurrency must be at least 1, --judge-timeout positive, "
            "--judge-retries not negative"
        )
    config = JudgeConfig(
        model=args.judge_model,
        base_url=args.judge_base_url,
        api_key_env=args.judge_key_env,
        timeout=args.judge_timeout,
        offline=args.offline,
        concurrency=args.judge_concurrency,
        retries=args.judge_retries,
    )
    store = open_store(args.judge_store, readonly=args.offline)
    return JudgeRun(JudgeClient(config, store), templates=_templates(args.judge_prompt), rubric_runs=args.judge_runs)


def audit_command(args: argparse.Namespace) -> int:
    from mcpgw.evaluator import audit as audit_mod
    from mcpgw.evaluator.report import print_audit, render_audit

    try:
        if args.limit < 0:  # a negative limit would cut rows off the end, as a slice does
            raise ValueError(f"--limit must be a number of rows, 0 or more (0: all), not {args.limit}")
        thresholds = audit_mod.parse_thresholds(args.fail_under) if args.fail_under else {}
        if not (getattr(args, "calls", None) or getattr(args, "cassette", None)):
            raise SourceUnavailable("no call records: give --calls FILE.jsonl or --cassette DIR")
        names = []
        if args.tools:
            from mcpgw.evaluator.catalog import names as catalog_names
            from mcpgw.evaluator.catalog import read_catalog

            names = catalog_names(read_catalog(args.tools))
        read = [0]  # records the audit went through: it aggregates them one at a time, keeping none

        def counted() -> Iterator[dict[str, Any]]:
            for record in iter_given_calls(args):
                read[0] += 1
                yield record

        with _reading_status():
            report = audit_mod.audit_calls(counted(), names)
        if not read[0]:
            raise SourceUnavailable("no call records: give --calls FILE.jsonl or --cassette DIR")
        report["tools"] = audit_mod.sort_tools(report["tools"], args.sort, descending=not args.ascending)
        failures = audit_mod.check_thresholds(report, thresholds)
        report["threshold_failures"] = failures
        if args.format == "terminal":
            _emit(args, None, lambda console: print_audit(report, console, args.limit))
        else:
            _emit(args, render_audit(report, args.format))
    except (EvaluatorError, ValueError) as exc:
        print(f"mcpgw: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    if args.output or args.format != "terminal":  # the terminal report on stdout already lists them
        for failure in failures:
            print(f"below threshold: {failure}", file=sys.stderr)
    return 1 if failures else 0
