"""Where a replayed answer came from, and the simulated one's making.

In replay every tools/call (and every other request a server answers) is answered
by the first of these that can, and its call-log record says which (`source`):

    recorded    an exact recording (the base cassette, or a recording the overlay
                holds from an earlier session of the same run kind: see below)
    equivalent  the recording of the same call once the arguments are normalised by
                the tool's inputSchema (cassette.equivalence)
    live        the real server (--on-miss live, i.e. --mode hybrid), recorded
    simulated   a language model given the tool and nearest recordings (--on-miss
                simulate; replay.simulator), recorded
    missed      nobody: refused, with what differs from the nearest recording

What a session adds (live and simulated answers) goes into the overlay cassette
when one is named (--overlay), never into the base. Played again, an overlay's
answers keep the label they were made with: an answer simulated once is
`simulated` in every replay of it, and a live answer taken into an overlay is
`live` (the real server, not the base recording), so a score over them says how
much of it rests on the recorded environment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcpgw.cassette.keys import base_key
from mcpgw.cassette.misses import simulator_gave_none
from mcpgw.cassette.recorder import Recorder
from mcpgw.cassette.store import StoreWriteError
from mcpgw.gateway.errors.tree import CassetteError, ReplayMiss
from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.replay.simulator import SIMULATOR_SERVER, SimulationFailed, Simulator

RECORDED, EQUIVALENT, LIVE, SIMULATED, MISSED = "recorded", "equivalent", "live", "simulated", "missed"
SOURCES = (RECORDED, EQUIVALENT, LIVE, SIMULATED, MISSED)
ANSWERED_AS = "answered_as"  # in memory only: an overlay entry's label (never written back)
META_KEY = "mcpgw/source"  # --label-in-result: the result's _meta names its source under this key


def label_all(entries: list[dict[str, Any]]) -> None:
    """A simulated answer is labelled so wherever it sits (an overlay merged into a base too): marked once, as
    loaded, so a hit reads its label in one look-up (`entry.get(ANSWERED_AS) or RECORDED`)."""
    for entry in entries:
        if entry.get("source") == SIMULATED:
            entry[ANSWERED_AS] = SIMULATED


def mark_overlay(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An overlay's entries as played over a base: each says what made it."""
    for entry in entries:
        entry[ANSWERED_AS] = SIMULATED if entry.get("source") == SIMULATED else LIVE
    return entries


def with_label(result: dict[str, Any], label: str) -> dict[str, Any]:
    """A copy of `result` whose _meta says where it came from (the recorded result is left as it is)."""
    meta = result.get("_meta")
    return {**result, "_meta": {**(meta if isinstance(meta, dict) else {}), META_KEY: label}}


class Simulation:
    """--on-miss simulate for every server that may be simulated: one simulator, answers kept in the overlay."""

    def __init__(self, simulator: Simulator, overlay: Any, redact: Callable[[Any], Any]) -> None:
        self.simulator = simulator
        self.overlay = overlay  # cassette.cassette.Cassette, written; the base is never
        self.redact = redact
        self.recorder = Recorder(overlay, redact)
        self.made = 0  # simulated answers made this session
        self.failed = 0
        self.gateway_ms = 0.0  # time spent in the gateway making them, the simulator's own time excluded

    async def answer(
        self,
        server: str,
        tool: dict[str, Any],
        call: Any,
        method: str,
        params: dict[str, Any],
        recorded: list[dict[str, Any]],
        options: CallOptions,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """The simulated result, the entry it is kept as (already written) and how it was made (which simulator,
        shown which recordings); ReplayMiss when there is none."""
        started = time.perf_counter()
        arguments = params.get("arguments") or {}
        try:
            simulated = await self.simulator.answer(server, tool, arguments, recorded)
        except SimulationFailed as exc:
            self.failed += 1
            raise ReplayMiss(
                simulator_gave_none(server, params, exc),
                data={"server": server, "method": method, "key": call.key, "simulator": self.simulator.model},
            ) from None
        waited = sum(e.get("latency_ms", 0.0) for e in simulated.exchanges) / 1000
        note = {"model": self.simulator.model, "shown": simulated.shown, "attempts": simulated.attempts}
        try:
            for number, exchange in enumerate(simulated.exchanges, 1):  # the simulator's own side, for the record
                request = exchange.get("request") or {}
                await self.recorder.record(
                    base_key(SIMULATOR_SERVER, "chat/completions", request),
                    SIMULATOR_SERVER,
                    "chat/completions",
                    request,
                    {"result": {k: v for k, v in exchange.items() if k != "request"}},
                    lane=options.lane,
                    for_key=call.key,
                    attempt=number,
                    source=SIMULATED,
                    wait=False,
                )
            entry = await self.recorder.record(
                call,
                server,
                method,
                params,
                {"result": simulated.result},
                lane=options.lane,
                source=SIMULATED,
                simulator=note,
                latency_ms=waited * 1000,
            )
        except StoreWriteError as exc:
            raise CassetteError(f"the answer was simulated, but the overlay could not be written: {exc}") from None
        entry = {**entry, ANSWERED_AS: SIMULATED}
        self.made += 1
        self.gateway_ms += max(0.0, time.perf_counter() - started - waited) * 1000
        return simulated.result, entry, note
