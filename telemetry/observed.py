"""The call log with observers: when telemetry is on, each finished record also goes to the tracer and the
metrics. When telemetry is off this class is not used at all, so a call pays nothing for it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcpgw.recorder.calllog import CallLog

logger = logging.getLogger("mcpgw.telemetry")
Observer = Callable[[dict[str, Any]], None]


class ObservedCallLog:
    """A CallSink in front of the call log (gateway.routing.router_core.CallSink)."""

    def __init__(self, inner: CallLog, observers: list[Observer]) -> None:
        self.inner, self.observers = inner, observers

    def append(self, record: dict[str, Any]) -> None:
        """The record as the router made it: an observer that lets its values out masks them (the tracer does, on
        its own thread, with the call log's masking: `mask_of`); nothing may change it (the call log has it)."""
        self.inner.append(record)
        for observer in self.observers:
            try:
                observer(record)
            except Exception:  # noqa: BLE001 - telemetry must not fail the call it describes
                logger.exception("mcpgw: telemetry observer failed; the call is unaffected")

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def health(self) -> dict[str, Any]:
        return self.inner.health()

    def __getattr__(self, name: str) -> Any:  # the rest of the call log (store, size ...) as it is
        return getattr(self.inner, name)


def mask_of(call_log: CallLog) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The call log's masking (declared keys, --redact patterns), None when it masks nothing."""
    return call_log.redact
