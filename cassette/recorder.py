"""Recorder: the one way an exchange of any kind gets into a cassette.

Every kind of exchange is recorded through it, as every kind is replayed through
`cassette.player.Player`: an MCP server's tools, resources and prompts (the
recording upstream, cassette.recording_upstream, the router API's calls included, which
reach servers through it), the `/v1` and Azure model exchanges (llm.passthrough),
and the answers an --on-miss simulator makes, with its own model exchanges
(replay.answer_sources). `entry_record` is the one place the stored record of
an exchange (an entry of the cassette's `exchanges` database) is made;
`Recorder.record` redacts it and writes it.

An entry's fields, in the order every cassette holds them (msgpack keeps the
order, so the same exchange is stored as the same bytes):

    key [base history changes_state]   what was asked (a kind keyed by state: the call's parts)
    server method params               who was asked what
    then, by kind:
    MCP server         [progress] result|error recorded_at latency_ms source server_info protocol_version lock_digest lane
    model              result lane recorded_at latency_ms source
    simulated answer   result lane source simulator recorded_at latency_ms
    simulator's own    lane for_key attempt result source recorded_at
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcpgw.cassette.state import Call

LIVE = "live"


def served_by(server_info: Any, protocol_version: Any, lock_digest: str) -> dict[str, Any]:
    """What a recording says of the live server that answered: the provenance's last fields."""
    return {"server_info": server_info, "protocol_version": protocol_version, "lock_digest": lock_digest}


def provenance(latency_ms: float, server: dict[str, Any], source: str = LIVE) -> dict[str, Any]:
    """An MCP exchange's (and a recorded catalog's) provenance: when, how long, from where (`server`: served_by)."""
    return {"recorded_at": time.time(), "latency_ms": round(latency_ms, 3), "source": source, **server}


def entry_record(
    asked: Call | str,
    server: str,
    method: str,
    params: Any,
    answer: dict[str, Any],
    *,
    lane: str,
    latency_ms: float | None = None,
    source: str = LIVE,
    server_facts: dict[str, Any] | None = None,
    progress: list[Any] | None = None,
    simulator: dict[str, Any] | None = None,
    for_key: str | None = None,
    attempt: int | None = None,
) -> dict[str, Any]:
    """The stored record of one exchange (the layouts: this module's docstring). `asked`: the call (its key and the
    state it was keyed at), or the key alone for a stateless kind stored without them (the model's); `answer`:
    {"result": ...} or {"error": ...}, as stored. The kind is told by what is given: `server_facts` (an MCP server's
    exchange: served_by), `simulator` (a simulated answer), `for_key` (a simulator's own exchange), else the model's."""
    if isinstance(asked, str):
        entry: dict[str, Any] = {"key": asked, "server": server, "method": method, "params": params}
    else:
        entry = {
            "key": asked.key,
            "base": asked.base,
            "history": asked.history,
            "changes_state": asked.changes_state,
            "server": server,
            "method": method,
            "params": params,
        }
    if for_key is not None:  # a simulator's own exchange, kept beside the answer it was asked for
        entry["lane"], entry["for_key"], entry["attempt"] = lane, for_key, attempt
        entry.update(answer)
        entry["source"], entry["recorded_at"] = source, time.time()
        return entry
    if progress is not None:  # the progress the client saw, replayed with the answer
        entry["progress"] = progress
    entry.update(answer)
    if server_facts is not None:  # provenance(), written in place
        entry["recorded_at"], entry["latency_ms"], entry["source"] = time.time(), round(latency_ms or 0.0, 3), source
        entry.update(server_facts)
        entry["lane"] = lane
    elif simulator is not None:
        entry["lane"], entry["source"], entry["simulator"] = lane, source, simulator
        entry["recorded_at"], entry["latency_ms"] = time.time(), round(latency_ms or 0.0, 3)
    else:
        entry["lane"], entry["recorded_at"] = lane, time.time()
        entry["latency_ms"], entry["source"] = round(latency_ms or 0.0, 3), source
    return entry


class Recorder:
    """Writes a cassette's exchanges and catalogs, redacted (`redact`: cassette.redaction.Redactor, or any
    callable over a JSON value). A write that fails raises cassette.store.StoreWriteError: the caller says what
    it means for its client (the call ran but was not kept)."""

    def __init__(self, cassette: Any, redact: Callable[[Any], Any]) -> None:
        self.cassette = cassette  # cassette.cassette.Cassette
        self.redact = redact

    async def record(
        self,
        asked: Call | str,
        server: str,
        method: str,
        params: Any,
        answer: dict[str, Any],
        *,
        lane: str,
        latency_ms: float | None = None,
        source: str = LIVE,
        server_facts: dict[str, Any] | None = None,
        progress: list[Any] | None = None,
        simulator: dict[str, Any] | None = None,
        for_key: str | None = None,
        attempt: int | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Record one exchange (the keywords: entry_record's) and return its entry as stored; with `wait`, once it is
        committed (an answer goes to its client only then: kill -9 safe). What was asked, answered and the progress
        seen are redacted; a simulator's own exchange is redacted whole, as it always was."""
        redact = self.redact
        entry: dict[str, Any]
        if for_key is not None:
            entry = redact(
                entry_record(
                    asked, server, method, params, answer, lane=lane, source=source, for_key=for_key, attempt=attempt
                )
            )
        else:
            entry = entry_record(
                asked,
                server,
                method,
                redact(params),
                {k: redact(v) for k, v in answer.items()},
                lane=lane,
                latency_ms=latency_ms,
                source=source,
                server_facts=server_facts,
                progress=None if progress is None else redact(progress),
                simulator=simulator,
            )
        written = self.cassette.record_exchange(entry, wait=wait)
        if wait:
            await written
        return entry

    def record_catalog(self, server: str, catalog: dict[str, Any], facts: dict[str, Any]) -> None:
        """A server's catalog (initialize and lists, as sent), redacted, with its provenance."""
        self.cassette.record_catalog(server, self.redact(catalog), provenance(0.0, facts))
