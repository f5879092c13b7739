"""Secrets stay out of what the gateway shows: logs, status reasons, error messages.

Cassettes are scrubbed per server by the recorder; the composition root hands
the same scrubbing (a callable masking every declared env value and `--redact`
pattern) to `register()` once at start. `scrub()` applies it to any text or
JSON value, and a log-record factory applies it to every log line and
traceback, whichever logger (ours, the SDK's, uvicorn's) writes it.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_scrubber: Callable[[Any], Any] | None = None
_factory_installed = False


def register(scrubber: Callable[[Any], Any]) -> None:
    """From now on, `scrubber` masks secrets in logs, status reasons and error messages."""
    global _scrubber
    _scrubber = scrubber
    _install_log_factory()


def scrub(value: T) -> T:
    """`value` with every registered secret masked (strings inside dicts and lists too)."""
    if _scrubber is None:
        return value
    scrubbed: T = _scrubber(value)  # the registered scrubber keeps a value's shape
    return scrubbed


def _install_log_factory() -> None:
    global _factory_installed
    if _factory_installed:
        return
    _factory_installed = True
    plain = logging.getLogRecordFactory()

    def scrubbing_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = plain(*args, **kwargs)
        if _scrubber is None:
            return record
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is logging's problem, not ours
            return record
        record.msg, record.args = _scrubber(message), None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = _scrubber("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
        return record

    logging.setLogRecordFactory(scrubbing_factory)
