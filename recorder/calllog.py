"""The call log: one record per tools/call through the gateway, in order.

Record fields (what the evaluator consumes) are listed in FIELDS. Records go
into the `calls` database of the run's cassette, keyed by a global sequence
number, so a cassette holds every run recorded into it in order.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mcpgw.cassette.codec import pack
from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.store import CassetteStore

logger = logging.getLogger(__name__)

FIELDS = (
    "run_id",
    "session_id",
    "lane",
    "seq",
    "started_at",
    "ended_at",
    "latency_ms",
    "client_name",
    "protocol_version",
    "server",
    "tool",
    "exposed_name",
    "arguments",
    "known_tool",
    "validation",
    "output_validation",
    "outcome",
    "is_error",
    "error",
    "result_digest",
    "cassette_key",
    "source",
    "input_schema_digest",
    "upstream_ms",
    "endpoint",  # where the call came in (/mcp, /servers/<id>/mcp, /servers/<id>/sse, /sse, stdio); older logs lack it
    "session_opened",  # when the call's MCP session was opened (handshake sessions over HTTP; else null): --tasks-by session
)
OUTCOMES = ("ok", "tool_error", "rejected", "upstream_error", "timeout", "miss", "diverged")


class CallLog:
    """Appends call records to a cassette without blocking the caller.

    Bounded twice: a string longer than `max_value` bytes is kept as its size and
    sha256 (the record keeps its shape; 4 MiB arguments do not cost 4 MiB a call),
    and once the cassette file and what was appended reach `max_bytes`, further
    records are dropped and counted, and `health()` says the log is full.
    """

    def __init__(
        self,
        store: CassetteStore,
        redact: Redactor | None = None,
        *,
        max_value: int = 64 * 1024,
        max_bytes: int = 1 << 30,
    ) -> None:
        self.store = store
        self.redact = redact if redact is not None and redact.active else None
        self.max_value = max_value
        self.max_bytes = max_bytes
        data = store.path / "data.mdb"
        self.size = data.stat().st_size if data.exists() else 0  # an estimate: file size + bytes appended since
        self.dropped = 0

    def describe(self) -> dict[str, Any]:
        """What /status shows of the call log."""
        return {"cassette": str(self.store.path), "call_log": self.health()}

    def append(self, record: dict[str, Any]) -> None:
        """Never raises: a call log that cannot be written must not fail the call it describes."""
        if self.redact is not None:  # arguments and errors can carry secrets too
            record = self.redact(record)
        packed = pack(record)
        if len(packed) > self.max_value:  # only then can one of its strings be over the cap
            record = cap_values(record, self.max_value)
            packed = pack(record)
        size = len(packed)
        if self.size + size > self.max_bytes:
            self.dropped += 1
            if self.dropped == 1:
                logger.error(
                    "call log %s is full (%d MiB limit, --max-call-log-mb): further records are dropped",
                    self.store.path,
                    self.max_bytes >> 20,
                )
            return
        self.size += size
        try:
            self.store.append("calls", record, packed=packed)  # packed once: its seq is written in at commit
        except Exception as exc:  # noqa: BLE001 - closed store at shutdown, and the like
            logger.error("call log: record of %s dropped: %s", record.get("exposed_name"), exc)

    def health(self) -> dict[str, Any]:
        health = {**self.store.health(), "bytes": self.size, "max_bytes": self.max_bytes, "dropped": self.dropped}
        if self.dropped:
            health["error"] = (
                f"call log full: {self.max_bytes >> 20} MiB limit reached, {self.dropped} record(s) "
                f"dropped; raise --max-call-log-mb or log into another cassette"
            )
        return health


def cap_values(value: Any, max_bytes: int) -> Any:
    """`value` with every string longer than `max_bytes` (UTF-8) replaced by its size and sha256."""
    if isinstance(value, str):
        if len(value) * 4 <= max_bytes:  # cannot be over the limit: skip encoding
            return value
        encoded = value.encode("utf-8", "surrogatepass")
        if len(encoded) <= max_bytes:
            return value
        return f"«omitted: {len(encoded)} bytes, sha256 {hashlib.sha256(encoded).hexdigest()}»"
    if isinstance(value, dict):
        return {k: cap_values(v, max_bytes) for k, v in value.items()}
    if isinstance(value, list):
        return [cap_values(v, max_bytes) for v in value]
    return value


def iter_calls(cassette_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every call record of a cassette, in order (opens it read-only)."""
    store = CassetteStore(Path(cassette_dir), create=False, readonly=True)
    try:
        for _, record in store.items("calls"):
            yield record
    finally:
        store.env.close()


def export_jsonl(
    cassette_dir: str | Path, out: IO[str], run_id: str | None = None, sources: dict[str, int] | None = None
) -> int:
    """Write the records as JSON lines; `sources`, when given, counts where their answers came from."""
    count = 0
    for record in iter_calls(cassette_dir):
        if run_id is not None and record.get("run_id") != run_id:
            continue
        if sources is not None and record.get("source"):
            sources[record["source"]] = sources.get(record["source"], 0) + 1
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        count += 1
    return count
