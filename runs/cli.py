"""`mcpgw run`: tasks x model x strategy through the gateway, recorded or replayed.

Exit status: 0 every task finished (ok or out of rounds); 1 some task did not
(timeout, model miss, model error...), each named on stderr; 2 bad input."""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from runs.report import Progress, summary

MODES = ("record", "replay", "live", "hybrid")


def add_commands(sub: Any) -> None:
    from llm.options import add_model_options
    from runs.distraction import DEFAULT_COUNT, DEFAULT_SEED
    from runs.strategies import STRATEGIES

    run = sub.add_parser("run", help="run benchmark tasks with a model through the gateway (recorded or replayed)",
                         description="Drive tasks through the gateway's /mcp and /v1 with an agent strategy. "
                                     "Each task is its own run id; answers go to answers.jsonl.")
    run.add_argument("tasks", nargs="+", help="task files: MCP-Bench JSON, MCP-AgentBench queries, MCPEval tasks")
    run.add_argument("--model", required=True, help="model name sent to the model endpoint")
    run.add_argument("--strategy", choices=sorted(STRATEGIES), default="tc",
                     help="tc: native tool calls; react: Thought/Action/Observation text; mcpbench: planning rounds")
    run.add_argument("--mode", choices=MODES, default="record",
                     help="record (default): live model and servers, all written to --cassette; replay: from --cassette, "
                          "no model, no server process, no network; live; hybrid: replay, misses taken live")
    run.add_argument("--gateway", metavar="URL", help="use this serving gateway (its mode and cassette) instead of starting one")
    run.add_argument("--answers", metavar="FILE", help="answers file (default: <call-log cassette>.answers.jsonl)")
    run.add_argument("--concurrency", type=int, default=4, help="tasks in flight (default 4)")
    run.add_argument("--task-timeout", type=float, default=600.0, metavar="SECONDS", help="per task (default 600)")
    run.add_argument("--max-rounds", type=int, default=20, help="model turns per task (default 20)")
    run.add_argument("--temperature", type=float, help="passed to the model")
    run.add_argument("--seed", type=int, help="passed to the model")
    run.add_argument("--stream", action="store_true", help="ask the model for streamed answers")
    run.add_argument("--model-retries", type=int, default=2, help="retries of a 5xx or a lost connection (default 2)")
    run.add_argument("--run-prefix", default="", help="prefix of each task's run id (e.g. to keep strategies apart)")
    run.add_argument("--task-id", action="append", default=[], metavar="ID", help="only this task (repeatable)")
    run.add_argument("--limit", type=int, help="only the first N tasks")
    cluster = run.add_argument_group("on a Ray cluster (pip install 'mcpgw[ray]')")
    cluster.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                         help="fan the tasks out over a Ray cluster, one gateway per node (auto, HOST:PORT, "
                              "ray://HOST:PORT; default auto); --cassettes-dir must be on storage every node sees")
    cluster.add_argument("--ray-task-cpus", type=float, default=1.0, metavar="N",
                         help="Ray CPUs each task takes: how many tasks a node runs at once (default 1)")
    bench = run.add_argument_group("MCP-Bench tasks (as MCP-Bench's runner offers them)")
    bench.add_argument("--distraction-count", type=int, default=DEFAULT_COUNT, metavar="N",
                       help="other servers' tools offered with each task whose file names none (default 10, "
                            "as MCP-Bench; 0: none, not even the file's)")
    bench.add_argument("--distraction-seed", type=int, default=DEFAULT_SEED, metavar="SEED",
                       help="seed of that draw, per task: one seed, the same servers in every run (default 0)")
    bench.add_argument("--detailed-description", action="store_true",
                       help="give the agent the task's detailed description instead of the fuzzy one")
    serve = run.add_argument_group("the gateway it starts (as `mcpgw serve`)")
    serve.add_argument("--config", help="lock file or mcpServers JSON (default ./servers.lock.yaml; not needed to replay)")
    serve.add_argument("--profile")
    serve.add_argument("--servers", nargs="+")
    serve.add_argument("--cassettes-dir", default="cassettes")
    serve.add_argument("--cassette", help="record: cassette to write (default run-<time>); replay/hybrid: the recording")
    serve.add_argument("--log-cassette", help="replay/hybrid: cassette for the call log (default <cassette>-<mode>-<time>)")
    serve.add_argument("--validate", choices=("enforce", "audit", "off"), default="audit")
    serve.add_argument("--naming", choices=("prefix", "benchmark"), default="prefix")
    serve.add_argument("--past-end", choices=("repeat", "miss"), default="repeat")
    serve.add_argument("--call-timeout", type=float, default=60.0)
    serve.add_argument("--port", type=int, help="port of the gateway it starts (default: a free one)")
    add_model_options(serve, log_results=4000)  # runs keep tool results by default: the judge reads them
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from evaluator.errors import EvaluatorError
    from runs.gateway_process import GatewayProcess
    from runs.attempts import plan
    from runs.manifest import write_manifest
    from runs.runner import RunOptions, run_tasks
    from runs.tasks import load_tasks

    for name in ("concurrency", "max_rounds"):
        if getattr(args, name) < 1:
            raise GatewayError(f"--{name.replace('_', '-')} must be at least 1")
    if args.port is not None and (args.gateway or args.ray is not None or not 0 <= args.port <= 65535):
        raise GatewayError(f"--port {args.port}: a port (0-65535) for the gateway `mcpgw run` starts; "
                           "not with --gateway (a gateway already serving) or --ray (one gateway per node)")
    if args.task_timeout <= 0 or args.model_retries < 0 or args.distraction_count < 0:
        raise GatewayError("--task-timeout must be positive, --model-retries and --distraction-count not negative")
    try:
        tasks = load_tasks(args.tasks, use_fuzzy=not args.detailed_description)
    except EvaluatorError as exc:
        raise GatewayError(getattr(exc, "message", str(exc))) from None
    if args.task_id:
        unknown = sorted(set(args.task_id) - {t.task_id for t in tasks})
        if unknown:
            raise GatewayError(f"--task-id {', '.join(unknown)}: not in the task files")
        tasks = [t for t in tasks if t.task_id in set(args.task_id)]
    tasks = tasks[: args.limit] if args.limit is not None else tasks
    if not args.gateway and args.mode != "replay" and not args.llm_base_url:
        raise GatewayError(f"--mode {args.mode} needs the model endpoint: --llm-base-url URL "
                           "(and --llm-key-env VAR naming the variable that holds its key)")
    options = RunOptions(strategy=args.strategy, model=args.model, concurrency=args.concurrency,
                         task_timeout=args.task_timeout, max_rounds=args.max_rounds, temperature=args.temperature,
                         seed=args.seed, stream=args.stream, run_prefix=args.run_prefix, model_retries=args.model_retries,
                         distraction_count=args.distraction_count, distraction_seed=args.distraction_seed)
    if args.ray is not None:
        from runs.ray_fanout import run_on_ray

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
        attempts = plan(status, [args.run_prefix + t.task_id for t in tasks])
        result = anyio.run(run_tasks, tasks, base, options, answers_path, Progress(), attempts)
        if log_cassette:
            write_manifest(log_cassette, {
                "started": started, "ended": time.time(), "mode": status.get("mode"), "model": args.model,
                "strategy": args.strategy, "run_prefix": args.run_prefix,
                "distraction": {"count": args.distraction_count, "seed": args.distraction_seed},
                "description": "detailed" if args.detailed_description else "fuzzy",
                "tasks": sorted({t.source for t in tasks}), "answers_file": str(answers_path.resolve()),
                "answers": result.answers, "timings": result.timings,
                "servers": {sid: info.get("title") or sid for sid, info in status.get("servers", {}).items()},
            })
    finally:
        if process is not None:
            process.stop()
    return summary(result, answers_path, log_cassette, time.time() - started)


def _serve_args(args: argparse.Namespace) -> tuple[list[str], str]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = ["--mode", args.mode, "--cassettes-dir", args.cassettes_dir, "--validate", args.validate,
           "--naming", args.naming, "--past-end", args.past_end, "--call-timeout", str(args.call_timeout),
           "--log-results", str(args.log_results)]
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
    return out, log_name
