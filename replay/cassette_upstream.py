"""CassetteUpstream: answers one server's requests from a cassette, starting nothing.

Identical requests are answered in recorded order, one FIFO lane per run
(`CallOptions.lane`) and request key. Past the end of a lane, `past_end`
decides: "repeat" the last answer (default) or "miss". A miss raises
`ReplayMiss` naming the nearest recorded requests, unless a `fallback`
(hybrid mode: a RecordingUpstream over the live server) takes it live.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gateway.catalog import ServerCatalog
from gateway.errors import ReplayMiss, UpstreamRejected
from gateway.upstream import CallOptions, Status
from recorder.keys import chain, request_key
from replay.nearest import describe_miss, nearest

PAST_END = ("repeat", "miss")


class CassetteUpstream:
    def __init__(
        self,
        name: str,
        recorded_catalog: dict[str, Any] | None,
        exchanges: dict[str, list[dict[str, Any]]],
        server_entries: list[dict[str, Any]],
        *,
        stateful: bool = False,
        past_end: str = "repeat",
        fallback: Any = None,
    ) -> None:
        self.name = name
        self.exchanges = exchanges
        self.server_entries = server_entries
        self.stateful = stateful
        self.past_end = past_end
        self.fallback = fallback
        self.catalog = ServerCatalog.from_dict(recorded_catalog["catalog"]) if recorded_catalog else None
        self.status = Status("ready" if self.catalog else "unavailable")
        if self.catalog is not None:
            self.status.server_info = self.catalog.init.get("serverInfo")
            self.status.protocol_version = self.catalog.init.get("protocolVersion")
            self.status.tools = len(self.catalog.tools)
            self.status.reason = "replaying from cassette"
        else:
            self.status.reason = "not in the cassette"
        self._lanes: Counter[tuple[str, str]] = Counter()
        self._history: dict[str, str] = {}
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()

    async def run(self, *, task_status: Any = None) -> None:
        if self.fallback is not None:  # hybrid: the live server is supervised as usual
            await self.fallback.run(task_status=task_status)
        elif task_status is not None:
            task_status.started()

    async def wait_ready(self, timeout: float) -> None:
        if self.fallback is not None:
            await self.fallback.wait_ready(timeout)

    async def aclose(self) -> None:
        if self.fallback is not None:
            await self.fallback.aclose()

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> dict[str, Any]:
        options = options or CallOptions()
        history = self._history.get(options.lane, "") if self.stateful else ""
        key = request_key(self.name, method, params, history)
        label = params.get("name") or method
        entries = self.exchanges.get(key)
        entry = None
        if entries:
            index = self._lanes[(options.lane, key)]
            if index < len(entries):
                entry = entries[index]
            elif self.past_end == "repeat":
                entry = entries[-1]
            self._lanes[(options.lane, key)] += 1
        if entry is None:
            self.misses[label] += 1
            if self.fallback is not None:
                options.cassette_key = key  # recorded under the key replay computes, history included
                if self.stateful:
                    self._history[options.lane] = chain(history, key)
                result = await self.fallback.request(method, params, options)
                self.exchanges.setdefault(key, []).append({"key": key, "result": result})
                self._lanes[(options.lane, key)] = len(self.exchanges[key])
                options.source = "live"
                return result
            stateful_note = self.stateful and bool(history)
            text = describe_miss(self.name, method, params, nearest(method, params, self.server_entries), stateful_note)
            options.source, options.cassette_key = "replay", key
            raise ReplayMiss(text, data={"server": self.name, "method": method, "key": key})
        self.hits[label] += 1
        if self.stateful:
            self._history[options.lane] = chain(history, key)
        options.source, options.cassette_key = "replay", key
        if options.on_progress is not None:
            for progress, total, message in entry.get("progress") or ():
                await options.on_progress(progress, total, message)
        if "error" in entry:
            error = entry["error"]
            raise UpstreamRejected(self.name, error.get("code", -32603), error.get("message", ""), error.get("data"))
        return entry["result"]
