"""`mcpgw run`: benchmark tasks with a model through the gateway."""

from __future__ import annotations

from typing import Any

from mcpgw.commands import lazy
from mcpgw.gateway.specs.modes import PastEnd, choices
from mcpgw.runs.cli import MODES, STRATEGY_NAMES


def register(sub: Any) -> None:
    from mcpgw.llm.options import add_model_options
    from mcpgw.runs.distraction import DEFAULT_COUNT, DEFAULT_SEED

    run = sub.add_parser(
        "run",
        help="run benchmark tasks with a model through the gateway (recorded or replayed)",
        description="Drive tasks through the gateway's /mcp and /v1 with an agent strategy. "
        "Each task is its own run id; answers go to answers.jsonl.",
    )
    run.add_argument("tasks", nargs="+", help="task files: MCP-Bench JSON, MCP-AgentBench queries, MCPEval tasks")
    run.add_argument("--model", required=True, help="model name sent to the model endpoint")
    run.add_argument(
        "--strategy",
        choices=STRATEGY_NAMES,
        default="tc",
        help="tc: native tool calls; react: Thought/Action/Observation text; mcpbench: planning rounds",
    )
    run.add_argument(
        "--mode",
        choices=MODES,
        default="record",
        help="record (default): live model and servers, all written to --cassette; replay: from --cassette, "
        "no model, no server process, no network; live; hybrid: replay, misses taken live",
    )
    run.add_argument(
        "--gateway", metavar="URL", help="use this serving gateway (its mode and cassette) instead of starting one"
    )
    run.add_argument("--answers", metavar="FILE", help="answers file (default: <call-log cassette>.answers.jsonl)")
    run.add_argument("--concurrency", type=int, default=4, help="tasks in flight (default 4)")
    run.add_argument("--task-timeout", type=float, default=600.0, metavar="SECONDS", help="per task (default 600)")
    run.add_argument("--max-rounds", type=int, default=20, help="model turns per task (default 20)")
    run.add_argument("--temperature", type=float, help="passed to the model")
    run.add_argument("--seed", type=int, help="passed to the model")
    run.add_argument("--stream", action="store_true", help="ask the model for streamed answers")
    run.add_argument("--model-retries", type=int, default=2, help="retries of a 5xx or a lost connection (default 2)")
    run.add_argument("--run-prefix", default="", help="prefix of each task's run id (e.g. to keep strategies apart)")
    run.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="run every task K times, each repeat a run of its own named <prefix><task id>#<i> (i = 1..K), "
        "which `mcpgw eval` groups as repeats of the task (default 1: run ids without #)",
    )
    run.add_argument("--task-id", action="append", default=[], metavar="ID", help="only this task (repeatable)")
    run.add_argument("--limit", type=int, help="only the first N tasks")
    cluster = run.add_argument_group("on a Ray cluster (pip install 'mcpgw[ray]')")
    cluster.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="fan the tasks out over a Ray cluster, one gateway per node (auto, HOST:PORT, "
        "ray://HOST:PORT; default auto); --cassettes-dir must be on storage every node sees",
    )
    cluster.add_argument(
        "--ray-task-cpus",
        type=float,
        default=1.0,
        metavar="N",
        help="Ray CPUs each task takes: how many tasks a node runs at once (default 1)",
    )
    bench = run.add_argument_group("MCP-Bench tasks (as MCP-Bench's runner offers them)")
    bench.add_argument(
        "--distraction-count",
        type=int,
        default=DEFAULT_COUNT,
        metavar="N",
        help="other servers' tools offered with each task whose file names none (default 10, "
        "as MCP-Bench; 0: none, not even the file's)",
    )
    bench.add_argument(
        "--distraction-seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="SEED",
        help="seed of that draw, per task: one seed, the same servers in every run (default 0)",
    )
    bench.add_argument(
        "--detailed-description",
        action="store_true",
        help="give the agent the task's detailed description instead of the fuzzy one",
    )
    serve = run.add_argument_group("the gateway it starts (as `mcpgw serve`)")
    serve.add_argument(
        "--config", help="lock file or mcpServers JSON (default ./servers.lock.yaml; not needed to replay)"
    )
    serve.add_argument("--profile")
    serve.add_argument("--servers", nargs="+", action="extend")
    serve.add_argument("--cassettes-dir", default="cassettes")
    serve.add_argument(
        "--cassette", help="record: cassette to write (default run-<time>); replay/hybrid: the recording"
    )
    serve.add_argument(
        "--log-cassette", help="replay/hybrid: cassette for the call log (default <cassette>-<mode>-<time>)"
    )
    serve.add_argument("--validate", choices=("enforce", "audit", "off"), default="audit")
    serve.add_argument("--naming", choices=("prefix", "benchmark"), default="prefix")
    serve.add_argument("--past-end", choices=choices(PastEnd), default=PastEnd.REPEAT.value)
    serve.add_argument("--call-timeout", type=float, default=60.0)
    serve.add_argument("--port", type=int, help="port of the gateway it starts (default: a free one)")
    add_model_options(serve, log_results=4000)  # runs keep tool results by default: the judge reads them
    from mcpgw.commands.answer_options import add_answer_options

    add_answer_options(run)
    run.set_defaults(func=lazy("mcpgw.runs.cli", "cmd_run"))
