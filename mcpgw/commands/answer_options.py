"""The flags that say what answers a replay's misses, and where what it adds is kept (`serve` and `run`)."""

from __future__ import annotations

import argparse
from typing import Any

from mcpgw.gateway.specs.modes import Mode, OnMiss, choices
from mcpgw.gateway.specs.settings import SimulatorSettings


def add_answer_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("evaluating another model on a recording (README: Evaluating another model)")
    group.add_argument(
        "--on-miss",
        choices=choices(OnMiss),
        default=OnMiss.REFUSE.value,
        help="replay: what answers a call the recording lacks (after an equivalent recording, the same "
        "call with the tool's schema defaults filled in, was looked for): refuse (default), live "
        "(the real server, recorded; what --mode hybrid does; with --mode replay, into --overlay) or simulate "
        "(--simulator-*)",
    )
    group.add_argument(
        "--overlay",
        metavar="NAME",
        help="replay: keep what this run adds (live and simulated answers, the model's own exchanges) in "
        "cassette NAME, layered over the played one, which is never written",
    )
    group.add_argument(
        "--model-mode",
        choices=("replay", "hybrid", "live"),
        help="the model side (/v1) when not as the tools: live = forward every request to "
        "--llm-base-url and record it into the overlay (a new model on a recorded environment)",
    )
    group.add_argument("--simulator-base-url", metavar="URL", help="OpenAI-compatible endpoint that simulates misses")
    group.add_argument("--simulator-model", metavar="NAME", help="model name sent to the simulator")
    group.add_argument("--simulator-key-env", metavar="VAR", help="environment variable holding the simulator's key")
    group.add_argument(
        "--simulator-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="longest wait for one simulated answer, its one retry included (default 60); past it the call is a miss",
    )
    group.add_argument(
        "--label-in-result",
        action="store_true",
        help="add where each answer came from to its result's _meta (mcpgw/source); by default only "
        "the call log says, so the agent is not biased by it",
    )


def answer_settings(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    """Settings fields from the flags; --on-miss live is --mode hybrid."""
    on_miss = OnMiss(args.on_miss)
    if mode == Mode.HYBRID and on_miss == OnMiss.REFUSE:
        on_miss = OnMiss.LIVE
    return {
        "on_miss": on_miss,
        "overlay": args.overlay,
        "model_mode": args.model_mode,
        "simulator": SimulatorSettings(
            base_url=args.simulator_base_url,
            model=args.simulator_model,
            key_env=args.simulator_key_env,
            timeout=args.simulator_timeout,
        ),
        "label_in_result": args.label_in_result,
    }
