"""Drift: re-issue a cassette's recorded calls live and compare each answer with the recording.

Servers start concurrently (the gateway's own supervised upstreams); calls to
servers declared stateless run concurrently with a bound; any other server
sees its calls in recorded order (its answers may depend on earlier calls). A
server with a fresh instance per run (`isolation: run`) was recorded that way:
each recorded run is re-issued, in its order, to an instance of its own, so
one run's state never shows in another's answers. Tools that declare `destructiveHint` (or whose
server the lock marks unsafe) are skipped unless `include_unsafe`. A server
that is down makes its calls "failing"; the rest of the report is complete.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcpgw.cassette.cassette import Recorded
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.upstreams.upstream import CallOptions, PerRunInstances, Upstream
from mcpgw.replay.compare import Difference, IgnoreRule, Rules, compare_results, propose_rules

MakeUpstream = Callable[[ServerSpec, Settings], Upstream]
CatalogDiff = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]

VERDICTS = ("identical", "equal_after_ignore", "changed", "failing", "skipped")


@dataclass
class CallDrift:
    server: str
    tool: str
    arguments: Any
    verdict: str
    differences: list[Difference] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "arguments": self.arguments,
            "verdict": self.verdict,
            "differences": [d.as_dict() for d in self.differences],
            "error": self.error,
        }


@dataclass
class DriftReport:
    cassette: str
    started: float
    ended: float = 0.0
    calls: list[CallDrift] = field(default_factory=list)
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)  # state, versions recorded vs live
    catalog: dict[str, Any] = field(default_factory=dict)  # per server: catalog changes
    proposals: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # --learn: server:tool -> rules

    def by_tool(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(VERDICTS, 0))
        for call in self.calls:
            table[f"{call.server}:{call.tool}"][call.verdict] += 1
        return dict(sorted(table.items()))

    @property
    def drift_share(self) -> float:
        """Share of compared calls (skips excluded) that changed or now fail."""
        compared = [c for c in self.calls if c.verdict != "skipped"]
        bad = [c for c in compared if c.verdict in ("changed", "failing")]
        return len(bad) / len(compared) if compared else 0.0

    def summary(self) -> dict[str, Any]:
        counts = {v: sum(1 for c in self.calls if c.verdict == v) for v in VERDICTS}
        return {
            "kind": "drift",
            "cassette": self.cassette,
            "started": self.started,
            "ended": self.ended,
            "calls": len(self.calls),
            **counts,
            "changed_share": round(self.drift_share, 4),
            "servers": self.servers,
            "catalog_breaking": sum(len(c.get("breaking", [])) for c in self.catalog.values()),
            "by_tool": self.by_tool(),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "calls_detail": [c.as_dict() for c in self.calls],
            "catalog": self.catalog,
            "proposals": self.proposals,
        }


async def run_drift(
    name: str,
    recorded: Recorded,
    specs: dict[str, ServerSpec],
    rules: dict[str, list[IgnoreRule]],
    settings: Settings,
    *,
    include_unsafe: bool = False,
    learn: bool = False,
    concurrency: int = 4,
    progress: Callable[[int, int], None] | None = None,
    catalog_diff: CatalogDiff | None = None,
    make_upstream: MakeUpstream,
) -> DriftReport:
    """`make_upstream(spec, settings)`: a live upstream as `serve` would start it (the composition root's)."""
    report = DriftReport(name, time.time())
    upstreams = {sid: make_upstream(spec, settings) for sid, spec in specs.items()}
    work = _plan(recorded, specs, include_unsafe, report)
    done = 0
    total = sum(len(calls) for calls in work.values())
    limiter = anyio.Semaphore(concurrency)

    async def one(server: str, entry: dict[str, Any], lane: str = "drift") -> None:
        nonlocal done
        params = entry["params"]
        tool = params.get("name", "?")
        upstream = upstreams[server]
        async with limiter:
            call = await _check(
                upstream, server, tool, params, entry, Rules.for_tool(rules.get(server, []), tool), lane
            )
            if call.verdict == "changed" and specs[server].nondeterministic and not specs[server].tracked:
                call = await _without_volatile(upstream, params, call)
            # Extra calls would shift a server's state under the recorded sequence: learn on stateless ones only.
            if learn and not specs[server].tracked and call.verdict in ("identical", "changed", "equal_after_ignore"):
                await _learn(upstream, params, report, f"{server}:{tool}")
        report.calls.append(call)
        done += 1
        if progress is not None:
            progress(done, total)

    async def in_order(server: str, entries: list[dict[str, Any]]) -> None:
        upstream = upstreams[server]
        if not isinstance(upstream, PerRunInstances):
            for entry in entries:  # a server that may hold state sees its calls in recorded order
                await one(server, entry)
            return
        runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entry in entries:
            runs[entry.get("lane") or ""].append(entry)
        for index, run_entries in enumerate(runs.values()):
            lane = f"drift-{index}"  # a fresh instance, as the run had when it was recorded
            for entry in run_entries:
                await one(server, entry, lane)
            await upstream.discard(lane)

    async with anyio.create_task_group() as tg:
        for upstream in upstreams.values():
            await tg.start(upstream.run)
        await _wait_all(upstreams, settings.start_timeout)
        for sid, upstream in upstreams.items():
            recorded_info = ((recorded.catalogs.get(sid) or {}).get("catalog") or {}).get("init", {}).get("serverInfo")
            report.servers[sid] = {
                "state": upstream.status.state,
                "reason": upstream.status.reason,
                "recorded": recorded_info,
                "live": upstream.status.server_info,
            }
            if catalog_diff is not None and upstream.catalog is not None and sid in recorded.catalogs:
                report.catalog[sid] = catalog_diff(
                    recorded.catalogs[sid]["catalog"].get("tools") or [], upstream.catalog.tools
                )
        async with anyio.create_task_group() as calls:
            for server, entries in work.items():
                if specs[server].tracked:
                    calls.start_soon(in_order, server, entries)
                else:
                    for entry in entries:
                        calls.start_soon(one, server, entry)
        for upstream in upstreams.values():
            await upstream.aclose()
    report.ended = time.time()
    return report


def _plan(
    recorded: Recorded, specs: dict[str, ServerSpec], include_unsafe: bool, report: DriftReport
) -> dict[str, list[dict[str, Any]]]:
    """The recorded tools/call exchanges to re-issue, per server, in recorded order; skips are reported."""
    work: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for server, entries in recorded.by_server.items():
        if server not in specs:
            continue
        tools = {
            t.get("name"): t for t in ((recorded.catalogs.get(server) or {}).get("catalog") or {}).get("tools") or []
        }
        unsafe_server = "unsafe" in specs[server].flags
        for entry in entries:
            if entry.get("method") != "tools/call" or "params" not in entry:
                continue
            tool = entry["params"].get("name", "?")
            annotations = (tools.get(tool) or {}).get("annotations") or {}
            destructive = bool(annotations.get("destructiveHint")) and not annotations.get("readOnlyHint")
            if (destructive or unsafe_server) and not include_unsafe:
                why = "declares destructiveHint" if destructive else "server marked unsafe in the lock"
                report.calls.append(
                    CallDrift(server, tool, entry["params"].get("arguments"), "skipped", error=f"not re-issued: {why}")
                )
                continue
            work[server].append(entry)
    return work


async def _check(
    upstream: Upstream, server: str, tool: str, params: dict[str, Any], entry: dict[str, Any], rules: Rules, lane: str
) -> CallDrift:
    arguments = params.get("arguments")
    if upstream.catalog is not None and tool not in {t.get("name") for t in upstream.catalog.tools}:
        return CallDrift(server, tool, arguments, "failing", error="the live server no longer offers this tool")
    try:
        live = (await upstream.request("tools/call", params, CallOptions(lane=lane))).result
    except GatewayError as exc:
        if "error" in entry and entry["error"].get("message") == exc.message:
            return CallDrift(server, tool, arguments, "identical")
        return CallDrift(server, tool, arguments, "failing", error=exc.message)
    if "error" in entry:
        return CallDrift(
            server, tool, arguments, "changed", [Difference("$.error", entry["error"].get("message"), None)]
        )
    everything, remaining = compare_results(entry.get("result") or {}, live, rules)
    if not everything:
        return CallDrift(server, tool, arguments, "identical")
    if not remaining:
        return CallDrift(server, tool, arguments, "equal_after_ignore", everything)
    verdict = "failing" if live.get("isError") and not (entry.get("result") or {}).get("isError") else "changed"
    return CallDrift(server, tool, arguments, verdict, remaining)


async def _volatile(upstream: Upstream, params: dict[str, Any]) -> list[Difference] | None:
    """Ask the same call twice live; what differs between two live answers is volatile."""
    try:
        first = (await upstream.request("tools/call", params, CallOptions(lane="learn"))).result
        await anyio.sleep(1.05)  # let second-resolution clocks tick
        second = (await upstream.request("tools/call", params, CallOptions(lane="learn"))).result
    except GatewayError:
        return None
    return compare_results(first, second)[0]


async def _without_volatile(upstream: Upstream, params: dict[str, Any], call: CallDrift) -> CallDrift:
    """A server flagged `nondeterministic`: differences at paths that also differ between two
    live answers are volatile, not drift (the lock's ignore rules, learned on the spot)."""
    volatile = {d.path for d in await _volatile(upstream, params) or []}
    if volatile and all(d.path in volatile for d in call.differences):
        return CallDrift(
            call.server,
            call.tool,
            call.arguments,
            "equal_after_ignore",
            call.differences,
            error=f"volatile (nondeterministic server): {', '.join(sorted(volatile))}",
        )
    return call


async def _learn(upstream: Upstream, params: dict[str, Any], report: DriftReport, label: str) -> None:
    differences = await _volatile(upstream, params)
    if differences:
        proposal = report.proposals.setdefault(label, {"paths": []})
        proposal["paths"] = sorted(set(proposal["paths"]) | set(propose_rules(differences)["paths"]))


async def _wait_all(upstreams: dict[str, Upstream], timeout: float) -> None:
    with anyio.move_on_after(timeout):
        async with anyio.create_task_group() as tg:
            for upstream in upstreams.values():
                tg.start_soon(upstream.wait_ready, timeout)
