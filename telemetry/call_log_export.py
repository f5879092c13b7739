"""`mcpgw calls export CASSETTE --format otlp --to URL`: a recorded call log sent as traces after the fact.

The spans are made by the same code as live ones (`tracing.Tracing` over `spans`), from the records as
stored, with their recorded times: a run recorded yesterday looks in Phoenix as it would have live. Unlike
live export, a collector that does not take the spans is an error here: the command exists to deliver them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.recorder.calllog import iter_calls
from mcpgw.telemetry.otlp_exporter import otlp_exporter
from mcpgw.telemetry.tracing import Tracing

IDLE_S = 300.0  # a lane's records further apart than this are two runs (serve's --run-idle-timeout default)


def records_of(paths: Iterable[Path], run_id: str | None) -> Iterable[dict[str, Any]]:
    for path in paths:
        for record in iter_calls(path):
            if run_id is None or record.get("run_id") == run_id:
                yield record


def export_otlp(
    paths: list[Path], url: str, run_id: str | None = None, *, content: bool = False, timeout: float = 10.0
) -> int:
    """Send every record of the cassettes' call logs (in their order) as spans to `url` (an OTLP/HTTP base URL);
    the number of records sent. Raises GatewayError when the collector did not take them all."""
    exporter = otlp_exporter(url, timeout=timeout, warn=False)  # a failure is this command's error, said below
    tracing = Tracing(
        exporter,
        content=content,
        idle_s=IDLE_S,
        max_open=1_000_000,
        max_queue=1 << 20,
        batch_delay_ms=200.0,
        record_time=True,
    )
    count = 0
    try:
        for record in records_of(paths, run_id):
            tracing.observe(record)
            count += 1
    finally:
        tracing.close(timeout_ms=int(timeout * 1000) * 3)
    if exporter.failed_batches:
        raise GatewayError(
            f"the collector at {url} did not take {exporter.failed_batches} batch(es) of spans; "
            "is it running (OTLP over HTTP, spans to URL/v1/traces)?"
        )
    return count
