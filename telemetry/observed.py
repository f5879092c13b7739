"""The call log with observers: when telemetry is on, each finished record also goes to the tracer and the
metrics, masked as the call log masks it. When telemetry is off this class is not used at all, so a call
pays nothing for it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcpgw.recorder.calllog import CallLog

logger = logging.getLogger("mcpgw.telemetry")
Observer = Callable[[dict[str, Any]], None]


class ObservedCallLog:
    """A CallSink in front of the call log (gateway.router_core.CallSink)."""

    def __init__(self, inner: CallLog, observers: list[Observer]) -> None:
        self.inner, self.observers = inner, observers
        self.redact = inner.redact

    def append(self, record: dict[str, Any]) -> None:
        self.inner.append(record)
        seen = self.redact(record) if self.redact is not None else record  # the declared keys never reach a span
        for observer in self.observers:
            try:
                observer(seen)
            except Exception:  # noqa: BLE001 - telemetry must not fail the call it describes
                logger.exception("mcpgw: telemetry observer failed; the call is unaffected")

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def health(self) -> dict[str, Any]:
        return self.inner.health()

    def __getattr__(self, name: str) -> Any:  # the rest of the call log (store, size ...) as it is
        return getattr(self.inner, name)
