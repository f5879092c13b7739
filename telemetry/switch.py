"""Telemetry as the gateway turns it on: the tracer and/or the metrics, the call log they observe, /metrics."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcpgw.gateway.specs.settings import Settings
from mcpgw.recorder.calllog import CallLog
from mcpgw.telemetry.observed import ObservedCallLog, mask_of


def wanted(settings: Settings) -> bool:
    return bool(settings.telemetry.otlp_endpoint or settings.telemetry.otlp_env or settings.telemetry.metrics)


class Telemetry:
    def __init__(self, settings: Settings) -> None:
        self.tracing: Any = None
        self.metrics: Any = None
        self.status: Any = None  # set once the HTTP app exists: its /status body, for /metrics' gauges
        if settings.telemetry.otlp_endpoint or settings.telemetry.otlp_env:
            from mcpgw.telemetry.otlp_exporter import otlp_exporter
            from mcpgw.telemetry.tracing import Tracing

            self.tracing = Tracing(
                otlp_exporter(settings.telemetry.otlp_endpoint),
                content=settings.telemetry.trace_content,
                idle_s=settings.run_idle_timeout,
                max_open=settings.max_lanes,
            )
            self.tracing.start_reaper()
            self.tracing.start_maker()
        if settings.telemetry.metrics:
            from mcpgw.telemetry.metrics import Metrics

            self.metrics = Metrics(status=lambda: self.status() if self.status is not None else {})

    def observe(self, call_log: CallLog) -> ObservedCallLog:
        if self.tracing is not None:
            self.tracing.mask = mask_of(call_log)
        observers = [part.observe for part in (self.tracing, self.metrics) if part is not None]
        return ObservedCallLog(call_log, observers)

    def routes(self) -> list[Route]:
        if self.metrics is None:
            return []
        from mcpgw.telemetry.metrics import CONTENT_TYPE

        metrics = self.metrics

        async def scrape(_: Request) -> Response:
            return Response(metrics.render(), media_type=CONTENT_TYPE)

        return [Route("/metrics", scrape, methods=["GET"])]

    def close(self) -> None:
        if self.tracing is not None:
            self.tracing.close()
