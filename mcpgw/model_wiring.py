"""The model side of the composition: the passthrough for a mode, its cassette and key."""

from __future__ import annotations

import os
from typing import Any

from mcpgw.cassette.redaction import Redactor
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.llm.passthrough import ModelPassthrough
from mcpgw.llm.upstream import LiveModel


def model_passthrough(
    settings: Any,
    mode: str,
    cassette: Any,
    entries: list[dict[str, Any]],
    default_run: str,
    redact_patterns: list[str] | None,
    call_log: Any = None,
    secrets: list[str] | None = None,
    recorded_runs: set[str] | None = None,
    trace_exchange: Any = None,
) -> ModelPassthrough:
    """Always built: without --llm-base-url, live/record answer 503 saying how to configure it,
    and replay needs none. `secrets`: the servers' declared values; a chat quotes tool answers and
    errors, so model exchanges are redacted of them as tool calls are."""
    key = None
    if settings.model.key_env:
        key = os.environ.get(settings.model.key_env)
        if not key and mode != "replay" and settings.model.base_url:
            raise GatewayError(
                f"--llm-key-env {settings.model.key_env}: that environment variable is not set "
                "(it must hold the model endpoint's API key)"
            )
    live = (
        LiveModel(settings.model.base_url, key, max_answer_bytes=settings.model.max_answer_bytes)
        if settings.model.base_url and mode != "replay"
        else None
    )
    return ModelPassthrough(
        mode,
        live,
        cassette=cassette if mode in ("record", "hybrid") else None,
        recorded_entries=entries,
        redact=Redactor([*(secrets or []), *([key] if key else [])], redact_patterns),
        default_run=default_run,
        past_end=settings.past_end,
        call_log=call_log,
        max_lanes=settings.max_lanes,
        recorded_runs=recorded_runs,
        trace_exchange=trace_exchange,
    )
