"""`GET /metrics`: Prometheus text format (prometheus-client), counted from the finished call-log records.

Counters move with each record (so they equal the call log's counts); the servers' states and restarts, the
HTTP sessions and the edge's refusals are read from /status's own body when scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mcpgw.telemetry.spans import answer_source, is_model, verdict

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: a replayed call's own time is tens of microseconds; a live one's wait reaches minutes.
BUCKETS = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
)
MAX_LANES_COUNTED = 100_000  # distinct lanes remembered for the lanes count (a bound on memory)


class Metrics:
    def __init__(self, status: Callable[[], dict[str, Any]] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.calls = Counter(
            "mcpgw_tool_calls",
            "tools/call through the gateway, by server, tool, outcome and verdict",
            ("server", "tool", "outcome", "verdict"),
            registry=r,
        )
        self.own = Histogram(
            "mcpgw_tool_call_own_seconds",
            "a call's time in the gateway itself (latency less the upstream wait)",
            ("server",),
            buckets=BUCKETS,
            registry=r,
        )
        self.upstream = Histogram(
            "mcpgw_tool_call_upstream_seconds",
            "a forwarded call's wait on its upstream (live server or cassette)",
            ("server",),
            buckets=BUCKETS,
            registry=r,
        )
        self.replay = Counter(
            "mcpgw_replay",
            "tool calls by where their answer came from (the call log's "
            "source): recorded, equivalent, live, simulated; miss, diverged",
            ("server", "source"),
            registry=r,
        )
        self.model = Counter(
            "mcpgw_model_exchanges",
            "model exchanges (/v1, the Azure route) by outcome: hit, miss, live, recorded",
            ("model", "outcome"),
            registry=r,
        )
        self.tokens = Counter(
            "mcpgw_model_tokens",
            "tokens the model answers reported, by kind (prompt, completion)",
            ("model", "kind"),
            registry=r,
        )
        self.lanes: set[str] = set()
        self.status = status
        r.register(_StatusCollector(self))

    def observe(self, record: dict[str, Any]) -> None:
        """One finished record (a tool call's or a model exchange's)."""
        lane = record.get("lane")
        if lane and len(self.lanes) < MAX_LANES_COUNTED:
            self.lanes.add(str(lane))
        if is_model(record):
            model = str(record.get("model") or "")
            self.model.labels(model, str(record.get("outcome"))).inc()
            for kind in ("prompt", "completion"):
                count = (record.get("tokens") or {}).get(kind)
                if count:
                    self.tokens.labels(model, kind).inc(count)
            return
        server = str(record.get("server") or "")
        self.calls.labels(
            server,
            str(record.get("tool") or record.get("exposed_name") or ""),
            str(record.get("outcome")),
            verdict(record),
        ).inc()
        source = answer_source(record)
        if source != "none":
            self.replay.labels(server, source).inc()
        latency, waited = record.get("latency_ms"), record.get("upstream_ms")
        if isinstance(latency, (int, float)):
            self.own.labels(server).observe(max(0.0, latency - (waited or 0.0)) / 1000)
        if isinstance(waited, (int, float)):
            self.upstream.labels(server).observe(waited / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _StatusCollector(Collector):
    """What /status knows at scrape time: servers' states and restarts, sessions, lanes, refusals at the edge."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # read at scrape time only

    def collect(self) -> Iterator[Metric]:
        lanes = GaugeMetricFamily("mcpgw_lanes", "distinct lanes (runs, or clients' lanes) that made a call")
        lanes.add_metric([], len(self.metrics.lanes))
        yield lanes
        status = self.metrics.status() if self.metrics.status is not None else {}
        state = GaugeMetricFamily("mcpgw_server_state", "1 for each server's current state", labels=("server", "state"))
        restarts = CounterMetricFamily(
            "mcpgw_server_restarts", "restarts of each server since the gateway started", labels=("server",)
        )
        for name, info in sorted((status.get("servers") or {}).items()):
            state.add_metric([name, str(info.get("state"))], 1)
            restarts.add_metric([name], info.get("restarts") or 0)
        yield state
        yield restarts
        http = status.get("http") or {}
        sessions = GaugeMetricFamily("mcpgw_sessions_open", "MCP sessions open over HTTP")
        sessions.add_metric([], (http.get("sessions") or {}).get("open", 0))
        yield sessions
        refused = CounterMetricFamily(
            "mcpgw_edge_refusals", "requests refused at the HTTP edge, by reason", labels=("reason",)
        )
        for reason, count in sorted((http.get("refused") or {}).items()):
            refused.add_metric([str(reason)], count)
        yield refused
