"""The call log: one record per tools/call through the gateway, in order.

Record fields (what the evaluator consumes) are listed in FIELDS. Records go
into the `calls` database of the run's cassette, keyed by a global sequence
number, so a cassette holds every run recorded into it in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import logging

from recorder.redaction import Redactor
from recorder.store import CassetteStore

logger = logging.getLogger(__name__)

FIELDS = (
    "run_id", "session_id", "lane", "seq", "started_at", "ended_at", "latency_ms", "client_name", "protocol_version",
    "server", "tool", "exposed_name", "arguments", "known_tool", "validation", "output_validation", "outcome",
    "is_error", "error", "result_digest", "cassette_key", "source", "input_schema_digest", "upstream_ms",
)
OUTCOMES = ("ok", "tool_error", "rejected", "upstream_error", "timeout", "miss", "diverged")


class CallLog:
    """Appends call records to a cassette without blocking the caller."""

    def __init__(self, store: CassetteStore, redact: Redactor | None = None) -> None:
        self.store = store
        self.redact = redact if redact is not None and redact.active else None

    def describe(self) -> dict[str, Any]:
        """What /status shows of the call log."""
        return {"cassette": str(self.store.path), "call_log": self.store.health()}

    def append(self, record: dict[str, Any]) -> None:
        """Never raises: a call log that cannot be written must not fail the call it describes."""
        if self.redact is not None:  # arguments and errors can carry secrets too
            record = self.redact(record)
        try:
            self.store.append("calls", record)
        except Exception as exc:  # noqa: BLE001 - closed store at shutdown, and the like
            logger.error("call log: record of %s dropped: %s", record.get("exposed_name"), exc)


def iter_calls(cassette_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every call record of a cassette, in order (opens it read-only)."""
    store = CassetteStore(Path(cassette_dir), create=False, readonly=True)
    try:
        for _, record in store.items("calls"):
            yield record
    finally:
        store.env.close()


def export_jsonl(cassette_dir: str | Path, out: IO[str], run_id: str | None = None) -> int:
    count = 0
    for record in iter_calls(cassette_dir):
        if run_id is not None and record.get("run_id") != run_id:
            continue
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        count += 1
    return count
