"""RecordingUpstream: forwards to a live upstream and writes every exchange.

Record mode goes through the one player (cassette.player.Player, mode "record"), as
replay does: it keys each call in request order, on the lane's history, as replay
will key it; in hybrid the replaying side's player has keyed it already. Every
exchange is written through the one recorder (cassette.recorder.Recorder).

An answer reaches the client only after its exchange is committed, so a
`kill -9` of the gateway never loses an exchange a client has seen. The key
is computed from the raw request; redaction applies to what is stored.
Transport failures (timeouts, crashes) are not answers and are not recorded;
JSON-RPC errors and `isError` results are, labelled as such.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import anyio
from anyio.abc import TaskStatus

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.player import Player
from mcpgw.cassette.recorder import Recorder, served_by
from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.state import Call, GroupState, StateModel, read_only_tools
from mcpgw.cassette.store import StoreWriteError
from mcpgw.gateway.errors.tree import CassetteError, UpstreamRejected
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.upstream import LIVE, CallOptions, Reply, Status, Upstream, answered_by


class RecordingUpstream:
    """An `Upstream` over another (`inner`, the live one) that writes what passes through."""

    def __init__(
        self,
        inner: Upstream,
        cassette: Cassette,
        *,
        tracked: bool,
        redact: Redactor,
        lock_digest: str,
        group: GroupState | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.cassette = cassette
        self.tracked = tracked
        self.redact = redact
        self.lock_digest = lock_digest
        self.recorder = Recorder(cassette, redact)
        self._group = group if group is not None else GroupState()  # lane -> history, shared within a state group
        self._player: tuple[Any, Player] | None = None  # (catalog its state model was built from, player)

    # The supervised lifecycle, catalog and status are the live upstream's.
    @property
    def status(self) -> Status:
        return self.inner.status

    @property
    def catalog(self) -> ServerCatalog | None:
        return self.inner.catalog

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self.inner.run(task_status=task_status)

    async def wait_ready(self, timeout: float) -> None:
        await self.inner.wait_ready(timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def record_catalog(self) -> None:
        catalog = self.inner.catalog
        if catalog is None:
            return
        self.recorder.record_catalog(self.name, catalog.as_dict(), self._served_by())

    def state_model(self) -> StateModel:
        """Which calls change state, by the live catalog's annotations (rebuilt when it changes)."""
        return self.player().model

    def player(self) -> Player:
        """Record mode's player, over the live catalog's state model (rebuilt when the catalog changes); the lanes'
        histories are the state group's (`group`), shared by every player of the group."""
        catalog = self.inner.catalog
        if self._player is None or self._player[0] is not catalog:
            model = StateModel(self.name, self.tracked, read_only_tools(catalog.tools if catalog else None))
            self._player = (catalog, Player(model, None, mode="record", group=self._group))
        return self._player[1]

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> Reply:
        options = options or CallOptions()
        call = self.player().play(options.lane, method, params).call  # record: keyed, as replay will key it
        if not self.tracked:
            return await self.request_keyed(call, method, params, options)
        # In the same step as its key: the server meets the lane's calls in the order they were keyed.
        ticket = self._group.gates.ticket(options.lane, call.changes_state)
        try:
            await ticket.turn()
            return await self.request_keyed(call, method, params, options)
        finally:
            ticket.leave()

    async def request_keyed(self, call: Call, method: str, params: dict[str, Any], options: CallOptions) -> Reply:
        """Answered live, recorded under `call`. In hybrid mode the replaying upstream owns the lane's history:
        it keys (and orders) the call and hands it here."""
        started = time.perf_counter()
        seen: list[list[Any]] | None = None
        if options.on_progress is not None:  # keep the progress the client saw, to replay it
            seen = []
            client_progress = options.on_progress

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append([progress, total, message])
                await client_progress(progress, total, message)

            options = replace(options, on_progress=on_progress)
        try:
            result = (await self.inner.request(method, params, options)).result
        except UpstreamRejected as exc:
            await self._write(
                call,
                method,
                params,
                {"error": {"code": exc.code, "message": exc.message, "data": exc.data}},
                started,
                options,
                seen,
            )
            raise answered_by(exc, LIVE, call.key)
        await self._write(call, method, params, {"result": result}, started, options, seen)
        return Reply(result, LIVE, call.key)

    async def _write(
        self,
        call: Call,
        method: str,
        params: dict[str, Any],
        answer: dict[str, Any],
        started: float,
        options: CallOptions,
        seen: list[list[Any]] | None,
    ) -> None:
        try:
            await self.recorder.record(
                call,
                self.name,
                method,
                params,
                answer,
                lane=options.lane,
                progress=seen,
                latency_ms=(time.perf_counter() - started) * 1000,
                server_facts=self._served_by(),
            )
        except StoreWriteError as exc:
            raise CassetteError(f"the call ran, but its recording could not be written: {exc}") from None

    def _served_by(self) -> dict[str, Any]:
        status = self.inner.status
        return served_by(status.server_info, status.protocol_version, self.lock_digest)
