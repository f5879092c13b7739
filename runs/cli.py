"""`mcpgw run`: tasks x model x strategy through the gateway, recorded or replayed.

Exit status: 0 every task finished (ok or out of rounds); 1 some task did not
(timeout, model miss, model error...), each named on stderr; 2 bad input."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.specs.modes import Mode, choices
from mcpgw.runs.report import Progress, summary

MODES = choices(Mode)
STRATEGY_NAMES = (
    "mcpbench",
    "react",
    "tc",
)  # runs.strategies.STRATEGIES' keys, named here so `--help` imports no strategy


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from mcpgw.evaluator.errors import EvaluatorError
    from mcpgw.runs.attempts import plan
    from mcpgw.runs.gateway_process import GatewayProcess
    from mcpgw.runs.manifest import write_manifest
    from mcpgw.runs.runner import RunOptions, run_tasks
    from mcpgw.runs.tasks import load_tasks, repeated, run_base

    for name in ("concurrency", "max_rounds"):
        if getattr(args, name) < 1:
            raise GatewayError(f"--{name.replace('_', '-')} must be at least 1")
    if args.port is not None and (args.gateway or args.ray is not None or not 0 <= args.port <= 65535):
        raise GatewayError(
            f"--port {args.port}: a port (0-65535) for the gateway `mcpgw run` starts; "
            "not with --gateway (a gateway already serving) or --ray (one gateway per node)"
        )
    if args.task_timeout <= 0 or args.model_retries < 0 or args.distraction_count < 0:
        raise GatewayError("--task-timeout must be positive, --model-retries and --distraction-count not negative")
    try:
        tasks = load_tasks(args.tasks, use_fuzzy=not args.detailed_description)
    except EvaluatorError as exc:
        raise GatewayError(getattr(exc, "message", str(exc))) from None
    if args.limit is not None and args.limit < 1:
        raise GatewayError(f"--limit {args.limit}: the number of tasks to run, at least 1")
    seen: dict[str, str] = {}
    for task in tasks:  # a task's id is its run's lane: two tasks of one id would share (and mix) one lane
        if task.task_id in seen:
            raise GatewayError(
                f"task {task.task_id!r} is given twice ({seen[task.task_id]} and {task.source}); "
                "each task id is one run: give each task file once"
            )
        seen[task.task_id] = task.source
    if args.answers:
        from mcpgw.runs.answers import check_answers_path

        check_answers_path(Path(args.answers), args.tasks)
    if args.task_id:
        unknown = sorted(set(args.task_id) - {t.task_id for t in tasks})
        if unknown:
            raise GatewayError(f"--task-id {', '.join(unknown)}: not in the task files")
        tasks = [t for t in tasks if t.task_id in set(args.task_id)]
    tasks = tasks[: args.limit] if args.limit is not None else tasks
    if args.repeat < 1:
        raise GatewayError(f"--repeat {args.repeat}: how many times to run each task, at least 1")
    tasks = repeated(tasks, args.repeat)
    if not args.gateway and (args.mode != "replay" or args.model_mode in ("live", "hybrid")) and not args.llm_base_url:
        raise GatewayError(
            f"--mode {args.mode}{' --model-mode ' + args.model_mode if args.model_mode else ''} needs the "
            "model endpoint: --llm-base-url URL "
            "(and --llm-key-env VAR naming the variable that holds its key)"
        )
    options = RunOptions(
        strategy=args.strategy,
        model=args.model,
        concurrency=args.concurrency,
        task_timeout=args.task_timeout,
        max_rounds=args.max_rounds,
        temperature=args.temperature,
        seed=args.seed,
        stream=args.stream,
        run_prefix=args.run_prefix,
        model_retries=args.model_retries,
        distraction_count=args.distraction_count,
        distraction_seed=args.distraction_seed,
    )
    if args.ray is not None:
        from mcpgw.runs.ray_fanout import run_on_ray

        return run_on_ray(args, tasks, options, *_serve_args(args))
    process = None
    if args.gateway:
        base = args.gateway.rstrip("/").removesuffix("/mcp")
    else:
        serve_args, log_name = _serve_args(args)
        process = GatewayProcess(serve_args, Path(args.cassettes_dir) / f"{log_name}.gateway.log", port=args.port)
        base = process.base
    started = time.time()
    try:
        import httpx

        try:
            status = httpx.get(base + "/status", timeout=10).json()
        except (httpx.HTTPError, ValueError) as exc:
            raise GatewayError(f"no gateway answering at {base} ({exc})") from None
        log_cassette = status.get("cassette")
        answers_path = Path(args.answers) if args.answers else Path(f"{log_cassette}.answers.jsonl")
        attempts = plan(status, [run_base(args.run_prefix, t) for t in tasks])
        result = anyio.run(run_tasks, tasks, base, options, answers_path, Progress(), attempts)
        if log_cassette:
            write_manifest(
                log_cassette,
                {
                    "started": started,
                    "ended": time.time(),
                    "mode": status.get("mode"),
                    "model": args.model,
                    "strategy": args.strategy,
                    "run_prefix": args.run_prefix,
                    "repeat": args.repeat,
                    "distraction": {"count": args.distraction_count, "seed": args.distraction_seed},
                    "description": "detailed" if args.detailed_description else "fuzzy",
                    "tasks": sorted({t.source for t in tasks}),
                    "answers_file": str(answers_path.resolve()),
                    "answers": result.answers,
                    "timings": result.timings,
                    "servers": {sid: info.get("title") or sid for sid, info in status.get("servers", {}).items()},
                },
            )
    finally:
        if process is not None:
            process.stop()
    return summary(result, answers_path, log_cassette, time.time() - started)


def _serve_args(args: argparse.Namespace) -> tuple[list[str], str]:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = [
        "--mode",
        args.mode,
        "--cassettes-dir",
        args.cassettes_dir,
        "--validate",
        args.validate,
        "--naming",
        args.naming,
        "--past-end",
        args.past_end,
        "--call-timeout",
        str(args.call_timeout),
        "--log-results",
        str(args.log_results),
    ]
    if args.mode in ("replay", "hybrid"):
        if not args.cassette:
            raise GatewayError(f"--mode {args.mode} needs --cassette NAME (the recorded run)")
        log_name = args.log_cassette or f"{args.cassette}-{args.mode}-{stamp}"
        out += ["--cassette", args.cassette, "--log-cassette", log_name]
    else:
        log_name = args.cassette or f"run-{stamp}"
        out += ["--cassette", log_name]
    if args.config:  # else serve's own default: ./servers.lock.yaml, then the one installed with mcpgw
        out += ["--config", args.config]
    if args.profile:
        out += ["--profile", args.profile]
    if args.servers:
        out += ["--servers", *args.servers]
    if args.llm_base_url:
        out += ["--llm-base-url", args.llm_base_url]
    if args.llm_key_env:
        out += ["--llm-key-env", args.llm_key_env]
    return out + _answer_arguments(args), log_name


def _answer_arguments(args: argparse.Namespace) -> list[str]:
    """What answers a replay's misses and where additions go (mcpgw.commands.answer_options), passed on to serve."""
    out = ["--on-miss", args.on_miss, "--simulator-timeout", str(args.simulator_timeout)]
    for flag, value in (
        ("--overlay", args.overlay),
        ("--model-mode", args.model_mode),
        ("--simulator-base-url", args.simulator_base_url),
        ("--simulator-model", args.simulator_model),
        ("--simulator-key-env", args.simulator_key_env),
    ):
        if value:
            out += [flag, value]
    return out + (["--label-in-result"] if args.label_in_result else [])
