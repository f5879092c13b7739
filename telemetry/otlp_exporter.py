"""The OTLP/HTTP exporter of the OpenTelemetry SDK, wrapped to say a dead collector once.

The SDK's exporter logs every failed batch (and retries it with backoff inside its own thread); a gateway whose
collector is down would fill its log. Here the first failure is one warning line, a recovery one info line,
and the SDK's own exporter logging is turned down. Export never touches a call: it runs in the batch
processor's thread, and its queue is bounded (spans past it are dropped, counted by the SDK).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger("mcpgw.telemetry")
QUIET = ("opentelemetry.exporter.otlp", "opentelemetry.exporter.http_transport", "opentelemetry.sdk._shared_internal")


def traces_url(endpoint: str | None) -> str | None:
    """Where spans go: `--otlp-endpoint` as a base URL (+ /v1/traces, as OTEL_EXPORTER_OTLP_ENDPOINT is read);
    without it, the SDK reads the standard OTEL_EXPORTER_OTLP_* variables (None: they name no endpoint either)."""
    if endpoint:
        return endpoint.rstrip("/") + "/v1/traces"
    return None


def quiet() -> None:
    """The SDK's exporter loggers turned down: each of them by name (some are not children of the others' names
    in the logging tree, depending on import order)."""
    for name in [*QUIET, *list(logging.root.manager.loggerDict)]:
        if name.startswith(QUIET):
            logging.getLogger(name).setLevel(logging.CRITICAL)


class OnceWarningExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, where: str, warn: bool = True) -> None:
        self.inner, self.where, self.warn = inner, where, warn  # warn=False: the caller reports failures itself
        self.failing = False
        self.failed_batches = 0
        self.abandoned = False
        quiet()

    def abandon(self) -> None:
        """At shutdown, with the collector failing: drop what is left at once (the SDK's shutdown also ends a
        retry's backoff wait), so a dead collector does not hold the gateway's exit for its timeout."""
        self.abandoned = True
        self.inner.shutdown()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.abandoned:
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - an exporter's bug must not end the processor's thread
            result, why = SpanExportResult.FAILURE, repr(exc)
        else:
            why = "the collector did not take the batch"
        if result is SpanExportResult.FAILURE:
            self.failed_batches += 1
            if not self.failing:
                self.failing = True
                if self.warn:
                    logger.warning(
                        "mcpgw: traces to %s are being dropped (%s); calls are not affected", self.where, why
                    )
        elif self.failing:
            self.failing = False
            logger.info(
                "mcpgw: traces to %s are exported again (%d batch(es) dropped)", self.where, self.failed_batches
            )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def otlp_exporter(endpoint: str | None, timeout: float = 5.0, warn: bool = True) -> OnceWarningExporter:
    url = traces_url(endpoint)
    where = (
        url or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    )
    timeout_env = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    return OnceWarningExporter(OTLPSpanExporter(endpoint=url, timeout=None if timeout_env else timeout), where, warn)
