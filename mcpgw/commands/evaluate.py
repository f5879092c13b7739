"""`mcpgw eval` (benchmark metrics and judges) and `mcpgw audit` (per-tool call validity)."""

from __future__ import annotations

import argparse
from typing import Any

from mcpgw.commands import lazy
from mcpgw.evaluator.cli import DEFAULT_STORE


def register(subparsers: Any) -> None:
    ev = subparsers.add_parser(
        "eval",
        help="benchmark metrics and judges from call logs, tasks and answers",
        description="Compute MCP-Bench, MCPEval and MCP-AgentBench metrics from recorded runs.",
    )
    _common(ev)
    ev.add_argument(
        "--tasks",
        metavar="FILE",
        action="append",
        default=[],
        help="task file (MCP-Bench JSON, MCPEval ground truth, MCP-AgentBench queries); repeatable",
    )
    ev.add_argument("--answers", metavar="FILE.jsonl", help="agents' final answers keyed by run_id")
    ev.add_argument(
        "--run",
        metavar="CASSETTE",
        help="a cassette written by `mcpgw run` (name or path): its call log, task files, answers and the "
        "servers' titles, all found in it",
    )
    ev.add_argument("--predictions", metavar="FILE", help="MCPEval predictions (instead of the call log)")
    ev.add_argument(
        "--results",
        metavar="FILE",
        action="append",
        default=[],
        help="a benchmark harness's own results, re-scored here: MCP-Bench per-task results "
        "(execution_results + available_tools) or MCPEval evaluation results; repeatable",
    )
    ev.add_argument(
        "--tasks-by",
        choices=("run", "session"),
        default="run",
        help="what one task is in the call log: a run id (default), or the MCP sessions of a run opened "
        "together, before the first call among them (MCP-Bench's runner through per-server endpoints: "
        "a session per server and task)",
    )
    ev.add_argument(
        "--max-simulated-share",
        type=float,
        metavar="X",
        help="mark tasks whose share of simulated tool answers exceeds X (0-1; a replay's --on-miss "
        "simulate); every report shows the answer sources per task either way",
    )
    ev.add_argument("--labels", metavar="FILE.jsonl", help="human pass/fail labels, for judge agreement")
    ev.add_argument("--weights", metavar="SPEC", help="MCPEval score weights, e.g. name=0.4,params=0.4,order=0.2")
    ev.add_argument(
        "--param-threshold",
        type=float,
        metavar="X",
        default=None,
        help="MCPEval flexible matching: the parameter score each call needs (default 0.6, as MCPEval)",
    )
    ev.add_argument(
        "--order-threshold",
        type=float,
        metavar="X",
        default=None,
        help="MCPEval flexible matching: the order score a task needs (default 0.5, as MCPEval)",
    )
    ev.add_argument(
        "--task-servers-only",
        action="store_true",
        help="MCP-Bench: a valid tool name must also be on one of the task's servers",
    )
    ev.add_argument(
        "--drift",
        metavar="FILE.json",
        help="a drift report (`mcpgw drift -o`) to show; default: the last one stored in --cassette",
    )
    ev.add_argument(
        "--recheck-schemas",
        action="store_true",
        help="re-validate every call against the --tools schemas instead of the recorded verdicts (slow)",
    )
    _repeats(ev)
    judge = ev.add_argument_group("LLM judge")
    judge.add_argument("--judge-model", metavar="NAME", help="judge model; judges run only when given")
    judge.add_argument("--judge-base-url", metavar="URL", help="OpenAI-compatible endpoint (default: OpenAI)")
    judge.add_argument(
        "--judge-key-env",
        metavar="VAR",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (default OPENAI_API_KEY)",
    )
    judge.add_argument(
        "--judge-prompt",
        metavar="[KIND=]FILE",
        action="append",
        default=[],
        help="exact original prompt text; KIND is agentbench, mcpbench or mcpeval",
    )
    judge.add_argument(
        "--judge-store",
        metavar="PATH",
        default=DEFAULT_STORE,
        help=f"where judge exchanges are recorded: LMDB dir, or a .jsonl file (default {DEFAULT_STORE})",
    )
    judge.add_argument("--offline", action="store_true", help="re-score from recorded judge exchanges only")
    judge.add_argument(
        "--judge-runs", type=int, default=5, metavar="N", help="MCP-Bench rubric runs per task (default 5)"
    )
    judge.add_argument(
        "--judge-concurrency", type=int, default=4, metavar="N", help="judge requests in flight (default 4)"
    )
    judge.add_argument(
        "--judge-timeout", type=float, default=60.0, metavar="SECONDS", help="seconds per judge request (default 60)"
    )
    judge.add_argument(
        "--judge-retries", type=int, default=3, metavar="N", help="retries after a transient failure (default 3)"
    )
    ev.set_defaults(func=lazy("mcpgw.evaluator.cli", "eval_command"))

    au = subparsers.add_parser(
        "audit",
        help="per-tool call-validity audit of a call log",
        description="Which tools are called wrongly, and how.",
    )
    _common(au)
    from mcpgw.evaluator.audit import SORT_KEYS

    au.add_argument(
        "--sort", choices=SORT_KEYS, default="invalid_rate", help="column to sort by (default invalid_rate)"
    )
    au.add_argument("--ascending", action="store_true", help="smallest first")
    au.add_argument(
        "--fail-under",
        metavar="SPEC",
        help="exit 1 when a tool falls below, e.g. validity=0.95,success=0.9 (metrics: validity, success, no_error)",
    )
    au.add_argument("--limit", type=int, default=50, metavar="N", help="rows in the terminal table (default 50)")
    au.set_defaults(func=lazy("mcpgw.evaluator.cli", "audit_command"))


def _repeats(ev: argparse.ArgumentParser) -> None:
    rep = ev.add_argument_group(
        "repeats and noise",
        "runs of one model on one task are repeats (the task: the answer's task_id, else the run id without "
        "a trailing #<i>); with repeats the report adds per-task spread, pass@k, pass^k and flips, each "
        "aggregate with a bootstrap interval over tasks (evaluator/METRICS.md)",
    )
    rep.add_argument(
        "--success",
        metavar="METRIC>=X",
        action="append",
        default=[],
        help="a pass/fail outcome from any per-run number, e.g. 'mcpbench.execution_success_rate>=0.9'; repeatable",
    )
    rep.add_argument("--ci", type=float, default=0.95, metavar="LEVEL", help="interval level (default 0.95)")
    rep.add_argument(
        "--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples per interval (default 1000)"
    )
    rep.add_argument("--seed", type=int, default=0, metavar="N", help="the bootstrap's random seed (default 0)")
    rep.add_argument(
        "--compare",
        nargs=2,
        metavar=("X", "Y"),
        help="two call logs (.jsonl) or cassettes of the same tasks: the paired difference Y - X of every "
        "aggregate, with a paired bootstrap interval and whether it is above the noise",
    )
    rep.add_argument(
        "--noise",
        nargs=2,
        metavar=("LIVE", "FROZEN"),
        help="the same tasks repeated with tools live and with tools replayed (model live in both): per "
        "metric the variance over repeats in each and the share of it the environment adds; per task the "
        "tool answers that differed between live repeats",
    )


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", metavar="FILE.jsonl", help="call log exported as JSONL")
    parser.add_argument("--cassette", metavar="NAME", help="read the call log straight from a cassette (name or path)")
    parser.add_argument(
        "--cassettes-dir", metavar="DIR", default="cassettes", help="folder of named cassettes (default: ./cassettes)"
    )
    parser.add_argument(
        "--log",
        metavar="WHICH",
        default=None,
        help="which call log of --cassette: recorded (default), last (newest replay session), all, or a session stamp",
    )
    parser.add_argument(
        "--tools",
        metavar="FILE.json",
        help="tool catalog (optional): names for near misses, descriptions for the judge, and "
        "schemas to check calls the gateway recorded without a verdict",
    )
    parser.add_argument("--format", choices=("terminal", "json", "markdown", "html"), default="terminal")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report here instead of stdout")
