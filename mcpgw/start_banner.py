"""What `mcpgw serve` says at start: the mode, where the call log goes, what a replay can answer and what a miss
does, and each server's state."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from mcpgw.cassette.cassette import Cassette, Recorded
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.specs.modes import Mode
from mcpgw.gateway.specs.settings import Settings
from mcpgw.llm.passthrough import MODEL_SERVER


class Serving(Protocol):
    """What the banner reads of the gateway being started (mcpgw.app.Gateway)."""

    notes: list[str]
    router: Router
    mode: Mode
    settings: Settings
    cassette: Cassette | None
    log_cassette: Cassette | None
    overlay: Cassette | None
    recorded: Recorded | None


def start_lines(gateway: Serving) -> list[str]:
    status = gateway.router.status()
    lines = [f"mcpgw: {note}" for note in gateway.notes]
    lines += [
        f"mcpgw: mode {gateway.mode}: {status['tools']} tools from {len(status['servers'])} server(s); "
        f"validate={gateway.settings.validate}; call log -> {gateway.log_cassette.path if gateway.log_cassette else None}"
    ]
    if gateway.mode in ("replay", "hybrid") and gateway.recorded is not None and gateway.cassette is not None:
        recorded = [
            c["provenance"].get("recorded_at") for c in gateway.recorded.catalogs.values() if c.get("provenance")
        ]
        when = datetime.fromtimestamp(max(recorded), UTC).strftime("%Y-%m-%d %H:%M UTC") if recorded else "unknown"
        lines.append(
            f"  replaying cassette {gateway.cassette.path} (recorded {when}, "
            f"{sum(len(v) for v in gateway.recorded.exchanges.values())} exchanges); no server process is started"
            + (" except for misses" if gateway.mode == "hybrid" else "")
        )
        lines.append(
            f"  recorded: {recorded_kinds(gateway.recorded)}; anything else is a miss. "
            f"See which calls: mcpgw cassette show {gateway.cassette.path.name} --calls"
        )
        lines.append(
            "  each run (?run=<id> or X-Run-Id; else each client) replays on its own; a run that leaves the "
            "recording is refused from then on, never answered from another state"
        )
        lines.append(
            f"  a miss (after an equivalent recording was looked for) is {ON_MISS_SAID[gateway.settings.on_miss]}"
            + (
                f"; what this run adds goes into overlay {gateway.overlay.path} (the played cassette is not written)"
                if gateway.overlay is not None
                else ", into the played cassette itself, as --mode hybrid does (--overlay NAME keeps what a run adds "
                "apart from it)"
                if gateway.mode == "hybrid"
                else ""
            )
        )
        lines.append("  to go live instead: mcpgw serve --mode live [--profile P]  (servers of servers.lock.yaml)")
    if (
        gateway.mode == "live"
        and not gateway.settings.cassette
        and not gateway.settings.log_cassette
        and gateway.log_cassette
    ):
        lines.append(
            f"  each live serve without --cassette keeps its call log in a new folder like this one "
            f"({gateway.settings.cassettes_dir}/live-<time>); --cassette NAME keeps it in one, "
            f"`mcpgw cassette ls` lists them, `mcpgw cassette rm NAME` removes one"
        )
    for name, info in sorted(status["servers"].items()):
        reason = f" ({info['reason']})" if info.get("reason") else ""
        lines.append(f"  {name:<24} {info['state']:<12} {info['exposed_tools']:>3} tools{reason}")
    return lines


ON_MISS_SAID = {
    "refuse": "refused, naming the nearest recorded calls (--miss-as-tool-error: given to the agent as a tool "
    "error instead; --mode hybrid: answered live)",
    "live": "answered live and recorded",
    "simulate": "answered by the simulator where the server may be simulated (stateless, or "
    "`simulate: allowed`), else refused",
}


def recorded_kinds(recorded: Recorded) -> str:
    """What a replay can answer, by kind: the model's exchanges (on /v1) counted beside the tool servers'
    calls, reads and prompts, so a cassette of a whole agent run does not look like a handful of calls."""
    model = tools = reads = prompts = 0
    for entries in recorded.exchanges.values():
        for entry in entries:
            method = entry.get("method")
            model += entry.get("server") == MODEL_SERVER
            tools += method == "tools/call"
            reads += method == "resources/read"
            prompts += method == "prompts/get"
    return (
        f"{tools} tool calls, {reads} resource reads, {prompts} prompts, "
        f"{model} model exchange{'' if model == 1 else 's'}"
    )
