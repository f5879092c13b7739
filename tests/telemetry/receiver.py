"""An OTLP/HTTP receiver on 127.0.0.1 for tests: decodes what it gets with OpenTelemetry's own protobuf
classes (opentelemetry-proto), or misbehaves as a collector can: answers 500, or holds each request."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


class Receiver:
    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode  # ok | fail (500) | hold (no answer until stopped)
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self.changed = threading.Condition()
        self.released = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.changed:
                    receiver.requests += 1
                    receiver.changed.notify_all()
                if receiver.mode == "hold":
                    receiver.released.wait(120)
                if receiver.mode != "ok":
                    self.send_response(500)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest.FromString(body)
                got = [
                    {
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_id": span.parent_span_id.hex() or None,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "status": span.status.code,
                        "status_message": span.status.message,
                        "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                    }
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                ]
                with receiver.changed:
                    receiver.spans += got
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, predicate: Any, timeout: float = 30.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: predicate(self), timeout), (
                f"receiver: condition not met in {timeout}s ({self.requests} requests, {len(self.spans)} spans)"
            )
