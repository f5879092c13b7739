"""Start servers the way the gateway does, read their catalogs, stop them.

Each server is a live upstream (the one factory, gateway.upstreams.factory) in its own task, all started concurrently;
each gets one start attempt, bounded by `timeout`, and is closed as soon as it
has answered (or failed), so a slow server never holds up the others' shutdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio

from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.factory import live_upstream
from mcpgw.lock.config import ServerSpec
from mcpgw.lock.install_lookup import CacheInstalls


@dataclass
class Probe:
    spec: ServerSpec
    state: str  # "ready" or why not: "unavailable", "starting" (timed out), ...
    reason: str | None
    catalog: ServerCatalog | None
    seconds: float  # from the start of the probe until ready (or given up)

    @property
    def ready(self) -> bool:
        return self.state == "ready" and self.catalog is not None


async def probe_servers(
    specs: list[ServerSpec],
    *,
    timeout: float,
    settings: Settings | None = None,
    on_done: Callable[[Probe], None] | None = None,
) -> list[Probe]:
    """Every server started at once; one `Probe` per spec, in the order given."""
    settings = settings or Settings(start_timeout=timeout, restart_backoff=timeout)
    results: dict[str, Probe] = {}

    async def one(spec: ServerSpec) -> None:
        results[spec.id] = probe = await _probe(spec, settings, timeout)
        if on_done is not None:
            on_done(probe)

    async with anyio.create_task_group() as tg:
        for spec in specs:
            tg.start_soon(one, spec)
    return [results[spec.id] for spec in specs]


async def _probe(spec: ServerSpec, settings: Settings, timeout: float) -> Probe:
    upstream = live_upstream(
        spec, settings, CacheInstalls(), per_run=False
    )  # one instance: its catalog is the server's
    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        await tg.start(upstream.run)
        await upstream.wait_ready(timeout)
        seconds = anyio.current_time() - started
        status = upstream.status
        if status.state == "starting":
            reason = f"did not become ready within {timeout:g}s"
        else:
            reason = status.reason
        probe = Probe(spec, status.state, reason, upstream.catalog if status.state == "ready" else None, seconds)
        await upstream.aclose()
    return probe
