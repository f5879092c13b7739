"""Command-line options of the model side (/v1) and of what the call log keeps, shared by
`mcpgw serve` and `mcpgw run`."""

from __future__ import annotations

import argparse


def add_model_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, log_results: int = 0) -> None:
    parser.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="OpenAI-compatible model endpoint that /v1/chat/completions forwards to (live, record, hybrid)",
    )
    parser.add_argument("--llm-key-env", metavar="VAR", help="environment variable holding that endpoint's API key")
    parser.add_argument(
        "--llm-max-body-bytes",
        type=int,
        default=4 * 1024 * 1024,
        metavar="BYTES",
        help="largest model request body accepted on /v1 (default 4 MiB, as /mcp; refused with 413)",
    )
    parser.add_argument(
        "--llm-body-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="time a client gets to send a whole model request body (default 120; then 408)",
    )
    parser.add_argument(
        "--llm-max-answer-bytes",
        type=int,
        default=64 * 1024 * 1024,
        metavar="BYTES",
        help="largest model answer relayed or recorded (default 64 MiB; a larger one is a 502)",
    )
    parser.add_argument(
        "--log-results",
        type=int,
        default=log_results,
        metavar="CHARS",
        help="keep each tool call's result text in the call log, cut to CHARS (default "
        + (f"{log_results})" if log_results else "0: digest only)"),
    )
