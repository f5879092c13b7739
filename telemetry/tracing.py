"""Spans of finished call-log records, sent with the OpenTelemetry SDK (batching processor, bounded queue).

One trace per run: each lane (a run id, or one client's lane under it) gets a root span `run <lane>` when its
first record comes; every tool call and model exchange of the lane is a child of it, with its recorded times.
A root ends (and is exported) when its lane has been idle `idle_s`, when more than `max_open` lanes are open
(the oldest ends), and at shutdown; its end is its last child's end.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcpgw.telemetry.spans import SpanShape, epoch_ns, root_attributes, shape

SERVICE = "mcpgw"


class _ChosenIds(RandomIdGenerator):
    """Random ids, but a span whose id was chosen before it was made (told to its server while the call ran,
    `Tracing.begin`) gets that id: set on this thread just before the span is started."""

    def __init__(self) -> None:
        self.chosen = threading.local()

    def generate_span_id(self) -> int:
        chosen = getattr(self.chosen, "span_id", None)
        if chosen is not None:
            self.chosen.span_id = None
            return chosen
        return super().generate_span_id()


_PROPAGATOR = TraceContextTextMapPropagator()


def remote_parent(traceparent: Any) -> Any:
    """The OpenTelemetry context of a W3C `traceparent` a client sent, or None when it is not a valid one."""
    if not isinstance(traceparent, str):
        return None
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    return context if trace.get_current_span(context).get_span_context().is_valid else None


@dataclass
class _Root:
    span: Any
    context: Any
    last_end_ns: int
    touched: float  # monotonic seconds of its last record


class Tracing:
    def __init__(
        self,
        exporter: SpanExporter,
        *,
        content: bool = False,
        idle_s: float = 300.0,
        max_open: int = 1000,
        max_queue: int = 4096,
        batch_delay_ms: float = 1000.0,
        record_time: bool = False,
        mask: Any = None,
    ) -> None:
        import time

        # Idle is measured on the wall clock live, and on the records' own times when a recorded log is replayed as
        # traces (`export`): a lane's records an idle time apart are two runs there as they were two live.
        self.clock = time.monotonic
        self.record_time = record_time
        self.mask = mask  # the call log's masking: no declared key reaches a span (done on the maker's thread)
        self.content, self.idle_s, self.max_open = content, idle_s, max_open
        # Attribute values cut at 16 KiB (opt-in content can be large; the call log caps its strings at 64 KiB).
        self.ids = _ChosenIds()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": SERVICE}),
            id_generator=self.ids,
            span_limits=SpanLimits(max_attribute_length=16 * 1024),
        )
        self.exporter = exporter
        self.processor = BatchSpanProcessor(
            exporter,
            max_queue_size=max_queue,
            schedule_delay_millis=batch_delay_ms,
            max_export_batch_size=min(512, max_queue),
        )
        self.provider.add_span_processor(self.processor)
        self._pending: deque[dict[str, Any]] = deque(maxlen=max_queue)  # records waiting for the span maker
        self._wake = threading.Event()
        self._draining = False
        self._maker: threading.Thread | None = None
        self.tracer = self.provider.get_tracer("mcpgw.telemetry")
        self.roots: OrderedDict[str, _Root] = OrderedDict()
        self.lock = threading.Lock()
        self.closed = False
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None

    def start_reaper(self) -> None:
        """Ends idle runs' roots in the background (a gateway may sit idle after its last run for hours)."""

        def loop() -> None:
            while not self._stop.wait(min(30.0, max(0.5, self.idle_s / 4))):
                self.end_idle()

        self._reaper = threading.Thread(target=loop, name="mcpgw-trace-roots", daemon=True)
        self._reaper.start()

    # -- records -------------------------------------------------------------------------

    def begin(self, record: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        """A tools/call about to be forwarded (gateway.routing.tool_calls, `trace_calls`): `params` with `_meta.traceparent`
        naming the call's span, for the server to continue the trace (the MCP semantic conventions'
        propagation). Under the client's own `_meta.traceparent` when it sent one."""
        try:
            meta = params.get("_meta")
            traceparent = self.context_for(record, meta.get("traceparent") if isinstance(meta, dict) else None)
            return {**params, "_meta": {**(meta if isinstance(meta, dict) else {}), "traceparent": traceparent}}
        except Exception:  # noqa: BLE001 - the call goes on without trace context
            return params

    def begin_exchange(self, record: dict[str, Any]) -> str | None:
        """A model exchange about to be forwarded (llm.passthrough, `trace_exchange`): the `traceparent` header for
        the model endpoint, naming the exchange's span (under the client's `client_traceparent` if any)."""
        try:
            return self.context_for(record, record.get("client_traceparent"))
        except Exception:  # noqa: BLE001
            return None

    def context_for(self, record: dict[str, Any], sent: Any) -> str:
        """The W3C traceparent of the span `record` will be: its id chosen now and noted in the record
        (`span_id`), in the client's trace when `sent` is a valid traceparent, else in its lane's."""
        parent = remote_parent(sent)
        if parent is not None:
            record["client_traceparent"] = sent
            trace_id = trace.get_current_span(parent).get_span_context().trace_id
        else:
            now = epoch_ns(record.get("started_at")) or 0
            root = self._root(
                str(record.get("lane") or record.get("run_id") or "default"), record.get("run_id"), now, now
            )
            trace_id = root.span.get_span_context().trace_id
        span_id = self.ids.generate_span_id()
        record["span_id"] = format(span_id, "016x")
        return f"00-{trace_id:032x}-{span_id:016x}-01"

    def observe(self, record: dict[str, Any]) -> None:
        """A finished record, handed to the span maker's thread (the SDK's span, its attributes' checks: ~80 us of
        CPU a call, kept off the call's answer); at most `max_queue` wait there, older ones dropped when full.
        Made here, at once, when no thread was started (`calls export`)."""
        if self.closed:
            return
        if self._maker is None:
            self.make(record)
            return
        self._pending.append(record)
        self._wake.set()

    def start_maker(self) -> None:
        def loop() -> None:
            while True:
                self._wake.wait()
                self._wake.clear()
                while self._pending:
                    self.make(self._pending.popleft())
                if self._draining:
                    return

        self._maker = threading.Thread(target=loop, name="mcpgw-spans", daemon=True)
        self._maker.start()

    def make(self, record: dict[str, Any]) -> None:
        """A finished record's span, under its lane's root, or the client's span when it sent a `traceparent`.
        Never raises (a call must not fail for its span)."""
        try:
            if self.mask is not None:
                record = self.mask(record)
            made = shape(record, content=self.content)
            parent = remote_parent(record.get("client_traceparent"))
            if parent is None:
                lane = str(record.get("lane") or record.get("run_id") or "default")
                parent = self._root(lane, record.get("run_id"), made.start_ns, made.end_ns).context
            chosen = record.get("span_id") if not self.record_time else None  # an export makes new ids
            self.emit(made, parent, int(chosen, 16) if isinstance(chosen, str) else None)
        except Exception:  # noqa: BLE001
            import logging

            logging.getLogger("mcpgw.telemetry").exception("mcpgw: a span could not be made; the call is unaffected")

    def emit(self, made: SpanShape, parent: Any, span_id: int | None = None) -> None:
        self.ids.chosen.span_id = span_id
        span = self.tracer.start_span(
            made.name, context=parent, kind=SpanKind.CLIENT, attributes=made.attributes, start_time=made.start_ns
        )
        if made.error is not None:
            span.set_status(Status(StatusCode.ERROR, made.error[:1000]))
        span.end(end_time=made.end_ns)

    def _root(self, lane: str, run_id: Any, start_ns: int, end_ns: int) -> _Root:
        now = start_ns / 1e9 if self.record_time else self.clock()
        ended: list[_Root] = []
        with self.lock:
            root = self.roots.get(lane)
            if root is not None and now - root.touched >= self.idle_s:  # back after its idle time: another run
                ended.append(self.roots.pop(lane))
                root = None
            if root is not None:
                self.roots.move_to_end(lane)
                root.last_end_ns, root.touched = max(root.last_end_ns, end_ns), now
            else:
                span = self.tracer.start_span(
                    f"run {lane}",
                    context=None,
                    kind=SpanKind.SERVER,
                    attributes=root_attributes(lane, run_id),
                    start_time=start_ns,
                )
                root = self.roots[lane] = _Root(span, trace.set_span_in_context(span), end_ns, now)
                while len(self.roots) > self.max_open:
                    ended.append(self.roots.popitem(last=False)[1])
            while self.roots:  # the least recently used first: stop at the first one still busy
                oldest = next(iter(self.roots.values()))
                if now - oldest.touched < self.idle_s or oldest is root:
                    break
                ended.append(self.roots.popitem(last=False)[1])
        for old in ended:
            old.span.end(end_time=old.last_end_ns)
        return root

    def end_idle(self) -> None:
        now = self.clock()
        with self.lock:
            idle = [lane for lane, r in self.roots.items() if now - r.touched >= self.idle_s]
            ended = [self.roots.pop(lane) for lane in idle]
        for old in ended:
            old.span.end(end_time=old.last_end_ns)

    def close(self, timeout_ms: int = 3000) -> None:
        """End every open root and send what is queued, then stop the exporter: all within `timeout_ms` (a stuck
        collector is left to its daemon thread, and the spans still queued are lost, said once)."""
        if self.closed:
            return
        self.closed = True
        self._stop.set()
        if self._maker is not None:  # the records handed over are made into spans first
            self._draining = True
            self._wake.set()
            self._maker.join(timeout_ms / 1000)
        with self.lock:
            ended = list(self.roots.values())
            self.roots.clear()
        for old in ended:
            old.span.end(end_time=old.last_end_ns)
        if getattr(self.exporter, "failing", False):  # telemetry.otlp_exporter.OnceWarningExporter
            self.exporter.abandon()

        def finish() -> None:
            self.processor.force_flush(timeout_ms)
            self.provider.shutdown()

        closing = threading.Thread(target=finish, name="mcpgw-trace-close", daemon=True)
        closing.start()
        closing.join(timeout_ms / 1000 + 0.5)
        if closing.is_alive() and not getattr(self.exporter, "failing", False):  # else said already
            import logging

            self.exporter.failing = True  # one line about it: the exporter, failing later, says nothing more
            logging.getLogger("mcpgw.telemetry").warning(
                "mcpgw: the trace collector did not take the last spans in %.1f s; they are dropped", timeout_ms / 1000
            )
