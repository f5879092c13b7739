"""The one upstream factory: how a server is started live, a shared instance or one per run.

`serve` (mcpgw.app) wraps it for record and hybrid; `drift` (replay.drift) is handed it by
mcpgw/commands/drift.py; `mcpgw lock check|refresh` and `servers install`'s verify step probe with it
(lock.probe). So every command starts a server the same way. Each gives it the installs to start
from (gateway.upstreams.installs: the lock's, mcpgw.lock.install_lookup.CacheInstalls).
"""

from __future__ import annotations

from collections.abc import Callable

from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.upstreams.events import CatalogChangedFn, NotificationFn
from mcpgw.gateway.upstreams.installs import Installs
from mcpgw.gateway.upstreams.isolation import PerRunUpstream
from mcpgw.gateway.upstreams.live import LiveUpstream
from mcpgw.gateway.upstreams.upstream import Upstream


def live_upstream(
    spec: ServerSpec,
    settings: Settings,
    installs: Installs,
    *,
    per_run: bool | None = None,
    on_notification: NotificationFn | None = None,
    on_catalog_changed: CatalogChangedFn | None = None,
    on_idle_stop: Callable[[str], None] | None = None,
) -> Upstream:
    """`per_run` (default: the lock's `isolation: run`): one instance per run, so a server's state
    does not leak between runs; otherwise one shared instance (with its own ${RUN_STATE_DIR}).
    `on_idle_stop`: told the run whose instance stopped for being idle (per run only)."""

    def make(s: ServerSpec, provides_catalog: bool) -> LiveUpstream:
        return LiveUpstream(
            s,
            settings,
            installs,
            on_notification=on_notification,
            on_catalog_changed=on_catalog_changed if provides_catalog else None,
        )

    if spec.isolated if per_run is None else per_run:
        return PerRunUpstream(
            spec,
            make,
            installs,
            idle_timeout=settings.run_idle_timeout,
            start_timeout=settings.start_timeout,
            on_idle_stop=on_idle_stop,
        )
    return make(spec, True)
