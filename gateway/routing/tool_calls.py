"""The tools/call path: find the tool, validate its arguments inline, forward, and write one call-log record.

Every call is logged, whatever its end: forwarded (ok, tool error), refused here (unknown tool,
invalid arguments), failed upstream (timeout, crash, replay miss or divergence) or abandoned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any

import anyio

from mcpgw.gateway.encoding.result_digest import result_digest
from mcpgw.gateway.errors.tree import (
    GatewayError,
    ReplayDiverged,
    ReplayMiss,
    UnknownToolError,
    UpstreamError,
    UpstreamTimeout,
)
from mcpgw.gateway.routing.router_core import Caller, RouterCore, upstream_meta
from mcpgw.gateway.tools.catalog import ToolEntry
from mcpgw.gateway.tools.validation import UNCHECKED
from mcpgw.gateway.upstreams.upstream import LIVE, CallOptions, Reply


class ToolCalls(RouterCore):
    def tool_input_schema(self, exposed: str) -> dict[str, Any] | None:
        entry = self.catalog.tools.get(exposed)
        return entry.tool.get("inputSchema") if entry else None

    async def call_tool(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        """Validate, forward, log. With `scope` (a per-server endpoint) `name` is that server's own tool name;
        the call is then the same call as through the namespaced endpoint, but for the record's `endpoint`."""
        started = time.time()
        t0 = time.perf_counter()
        waited = 0.0  # seconds on the upstream: the rest of the call is the gateway's own work (/status)
        name = params.get("name")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if scope is not None:  # a per-server endpoint waits for its server's first start, as lists do
            await self.until_settled(scope)
        view = self.catalog.server_view(scope) if scope is not None else None
        entry = (self.catalog.tools if view is None else view.tools).get(name) if isinstance(name, str) else None
        if (
            entry is None
        ):  # a name the catalog lacks during start-up may be a starting server's tool: looked up again once settled
            entry = await self.found(
                lambda: (
                    (self.catalog.tools if view is None else view.tools).get(name) if isinstance(name, str) else None
                )
            )
        record = self._new_record(caller, started, entry.exposed if entry else name, arguments, entry)
        if view is not None and entry is None:
            record["server"] = scope
        if entry is None and isinstance(name, str) and self._sole_server() is not None and view is None:
            entry = self._passthrough_tool(name)
            record["server"], record["tool"] = entry.server, name
        try:
            if entry is None:
                owner = self._unavailable_owner(name) if view is None and isinstance(name, str) else None
                if owner is not None:  # a name of a known server that has nothing to serve: its state and reason
                    record["server"], record["tool"] = owner
                    await self.until_settled(owner[0])  # raises UpstreamUnavailable
                near = (view or self.catalog).near_tools(str(name))
                if near and view is None:
                    record["server"] = self.catalog.tools[near[0]].server
                record["outcome"] = "rejected"
                raise UnknownToolError(str(name), near)
            checkable = self.settings.validate != "off" and record["known_tool"]  # a passthrough has no schema
            verdict = entry.input.check(arguments) if checkable else UNCHECKED
            record["validation"] = verdict.as_dict()
            if verdict.valid is False and self.settings.validate == "enforce":
                # Per the spec, argument errors are tool results the model can read and correct.
                record["outcome"] = "rejected"
                record["is_error"] = True
                text = (
                    f"Invalid arguments for tool {entry.exposed!r}: {verdict.describe()}. The call was not forwarded."
                )
                return {"content": [{"type": "text", "text": text}], "isError": True}
            if self.trace_calls is not None:  # traces on: the server gets our span as its parent (MCP's _meta)
                params = self.trace_calls(record, params)
            forwarded = time.perf_counter()
            try:
                reply = await self._forward(entry, params, arguments, self._options(entry.server, caller))
            except GatewayError as exc:  # the upstream's failure, and where it came from (a live server's: unsaid)
                record["source"], record["cassette_key"] = exc.answer_source or LIVE, exc.cassette_key
                raise
            finally:
                waited = time.perf_counter() - forwarded
                record["upstream_ms"] = round(waited * 1000, 3)
            result = reply.result
            record["source"], record["cassette_key"] = reply.source, reply.cassette_key
            if reply.note is not None:  # a simulated answer: which simulator, shown which recordings
                record["simulator"] = reply.note
            is_error = bool(result.get("isError"))
            record["is_error"] = is_error
            record["outcome"] = "tool_error" if is_error else "ok"
            # A replayed result's digest is made once per recorded answer (replay.cassette_upstream).
            record["result_digest"] = reply.result_digest or result_digest(result)
            if self.settings.log_results:  # what the tool returned, for judges reading the log
                record["result"] = _result_text(result, self.settings.log_results)
            if (
                entry.output is not None
                and not is_error
                and "structuredContent" in result
                and self.settings.validate != "off"
            ):
                record["output_validation"] = entry.output.check(result["structuredContent"]).as_dict()
            return result
        except (ReplayDiverged, ReplayMiss) as exc:
            record["outcome"] = "diverged" if isinstance(exc, ReplayDiverged) else "miss"
            record["error"] = exc.message
            if self.settings.miss_as_tool_error:  # the agent reads it as the tool's answer and may go on
                record["is_error"] = True
                return {"content": [{"type": "text", "text": exc.message}], "isError": True}
            raise
        except UpstreamTimeout as exc:
            record["outcome"] = "timeout"
            record["error"] = exc.message
            raise
        except UpstreamError as exc:
            record["outcome"] = "upstream_error"
            record["error"] = exc.message
            raise
        except GatewayError as exc:
            record["error"] = exc.message
            raise
        except BaseException as exc:  # cancelled by the client, or a bug: still logged
            record["outcome"] = "upstream_error"
            record["error"] = (
                f"{type(exc).__name__}: call abandoned"
                if isinstance(exc, anyio.get_cancelled_exc_class())
                else repr(exc)
            )
            raise
        finally:
            ended = time.time()
            record["ended_at"] = _iso(ended)
            took = time.perf_counter() - t0
            record["latency_ms"] = round(took * 1000, 3)
            self.own_work_s.append(took - waited)
            self.calls_served += 1
            if self.call_log is not None:
                self.call_log.append(record)

    async def log_malformed(self, params: Any, caller: Caller, scope: str | None, problem: str) -> None:
        """A tools/call refused before any handler ran (the SDK's check of its params: `arguments` not an object,
        `name` missing or not a string). It reached no server, but the agent made it, so the call log has it, as
        refused, with the tool's own check of the arguments when the name is a known tool's."""
        params = params if isinstance(params, dict) else {}
        name, arguments = params.get("name"), params.get("arguments")
        now = time.time()
        entry = await self.found(
            lambda: (
                (self.catalog.tools if scope is None else self.catalog.server_view(scope).tools).get(name)
                if isinstance(name, str)
                else None
            )
        )
        record = self._new_record(
            caller, now, entry.exposed if entry else name if isinstance(name, str) else "", arguments, entry
        )
        if entry is None and scope is not None:
            record["server"] = scope
        if entry is not None and self.settings.validate != "off":
            record["validation"] = entry.input.check(arguments).as_dict()
        record["outcome"], record["error"] = "rejected", f"Invalid request parameters: {problem}"
        ended = time.time()  # after a wait for the start-up, if the name was not known yet
        record["ended_at"], record["latency_ms"] = _iso(ended), round((ended - now) * 1000, 3)
        if self.call_log is not None:
            self.call_log.append(record)

    def _unavailable_owner(self, name: str) -> tuple[str, str] | None:
        """(server, tool) when a name the catalog lacks names a known server that is not available (failed to
        start, not installed): `<server><separator><tool>`, `Title:tool` under benchmark naming, or any name in
        front of one server named bare. None otherwise: then it is an unknown tool, with the nearest names."""
        if self.naming.mode == "benchmark":
            title, colon, tool = name.partition(":")
            named = [(sid, tool) for sid, spec in self.specs.items() if colon and spec.display_name == title]
        else:
            head = self.naming.separator
            named = [(sid, name[len(sid) + len(head) :]) for sid in self.upstreams if name.startswith(sid + head)]
            if self.naming.mode == "bare" and len(self.upstreams) == 1:
                named.append((next(iter(self.upstreams)), name))
        for server, tool in named:
            upstream = self.upstreams.get(server)
            if upstream is not None and upstream.catalog is None:
                return server, tool
        return None

    def _passthrough_tool(self, name: str) -> ToolEntry:
        server = self._sole_server()
        assert server is not None
        return ToolEntry(server, name, name, {"name": name}, self.validators.compile({}), None)

    def _forward(
        self, entry: ToolEntry, params: dict[str, Any], arguments: Any, options: CallOptions
    ) -> Awaitable[Reply]:
        # Every param passes through (e.g. `task`), with the upstream's own tool name. (The upstream's coroutine
        # handed back to be awaited: no coroutine of its own to await it.)
        out = {k: v for k, v in params.items() if k != "_meta"}
        out["name"], out["arguments"] = entry.name, arguments
        meta = upstream_meta(params.get("_meta"))
        if meta:
            out["_meta"] = meta
        return self.upstreams[entry.server].request("tools/call", out, options)

    def _new_record(
        self, caller: Caller, started: float, name: Any, arguments: Any, entry: ToolEntry | None
    ) -> dict[str, Any]:
        return {
            "seq": None,  # first: the store writes its number into the packed record (cassette.store.with_seq)
            "run_id": caller.run_id,
            "session_id": caller.session_id,
            "lane": caller.lane,
            "started_at": _iso(started),
            "ended_at": None,
            "latency_ms": None,
            "client_name": caller.client_name,
            "protocol_version": caller.protocol_version,
            "server": entry.server if entry else None,
            "tool": entry.name if entry else None,
            "exposed_name": name,
            "arguments": arguments,
            "known_tool": entry is not None,
            "validation": {"valid": None, "errors": []},
            "output_validation": None,
            "outcome": None,
            "is_error": False,
            "error": None,
            "result_digest": None,
            "cassette_key": None,
            "source": None,  # where its answer came from (replay.answer_sources); a call refused here reached no server
            "input_schema_digest": entry.input.digest if entry else None,
            "upstream_ms": None,
            "endpoint": caller.endpoint,
            "session_opened": caller.session_opened,
        }


def _result_text(result: dict[str, Any], limit: int) -> str:
    """A result's text content (else its JSON), cut to `limit` characters with a note of the cut."""
    parts = [c.get("text", "") for c in result.get("content") or () if isinstance(c, dict) and c.get("type") == "text"]
    text = (
        "\n".join(parts)
        if parts
        else json.dumps(result.get("structuredContent", result), ensure_ascii=False, sort_keys=True, default=str)
    )
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


# The last whole second formatted (to its decimal point), and the last millisecond's stamp: a call's two stamps
# often fall in one millisecond. Each a (number, text) pair replaced whole, so a reader never pairs two of them.
_SECOND: list[tuple[Any, str]] = [(None, "")]
_MILLI: list[tuple[Any, str]] = [(None, "")]


def _iso(ts: float) -> str:
    """`datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds")`, at a fraction of its cost."""
    second = int(ts // 1)
    micro = round((ts - second) * 1e6)  # as datetime rounds (half to even), then truncates to milliseconds
    if micro >= 1_000_000:
        second, micro = second + 1, micro - 1_000_000
    milli = second * 1000 + micro // 1000
    last = _MILLI[0]
    if last[0] == milli:
        return last[1]
    made = _SECOND[0]
    if made[0] != second:
        made = _SECOND[0] = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    text = "%s%03d+00:00" % (made[1], micro // 1000)
    _MILLI[0] = (milli, text)
    return text


iso_time = _iso  # the call log's time format, for other fields of a record (gateway.mcp_server: session_opened)
