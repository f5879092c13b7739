"""Secrets stay out of what the gateway shows: logs, status reasons, error messages.

Cassettes are scrubbed per server by `recorder.redaction.Redactor`; this is the
same scrubbing for everything else the process prints or answers. The gateway
registers the values it knows to be secret (every declared env value of every
server, `--redact` patterns) once at start; `scrub()` masks them in any text,
and a log-record factory masks them in every log line and traceback, whichever
logger (ours, the SDK's, uvicorn's) writes it.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from recorder.redaction import Redactor

_redactor = Redactor()
_factory_installed = False


def register(values: list[str], patterns: list[str] | None = None) -> None:
    """Secrets of this process, from now on masked in logs, status reasons and error messages."""
    global _redactor
    _redactor = Redactor(values, patterns)
    _install_log_factory()


def scrub(value: Any) -> Any:
    """`value` with every registered secret masked (strings inside dicts and lists too)."""
    return _redactor(value)


def _install_log_factory() -> None:
    global _factory_installed
    if _factory_installed:
        return
    _factory_installed = True
    plain = logging.getLogRecordFactory()

    def scrubbing_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = plain(*args, **kwargs)
        if not _redactor.active:
            return record
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is logging's problem, not ours
            return record
        record.msg, record.args = _redactor(message), None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = _redactor("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
        return record

    logging.setLogRecordFactory(scrubbing_factory)
