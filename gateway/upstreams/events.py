"""What upstreams report on their own: a server's notification, and a changed catalog.

`UpstreamEvents` is made before the upstreams, which are built with its two methods as their callbacks;
the router listens from its constructor (gateway.routing.router_core). So the upstreams and the router are
each given what they need at construction, though each reaches the other. An event before anyone listens
reaches nobody (an upstream reports only once it runs, and only the router runs it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

NotificationFn = Callable[[str, str, dict[str, Any]], Awaitable[None]]  # (server, method, params)
CatalogChangedFn = Callable[[str, str], Awaitable[None]]  # (server, kind)


class UpstreamEvents:
    """One gateway's upstream events, passed on to its one listener."""

    def __init__(self) -> None:
        self._on_notification: NotificationFn | None = None
        self._on_catalog_changed: CatalogChangedFn | None = None

    def listen(self, on_notification: NotificationFn, on_catalog_changed: CatalogChangedFn) -> None:
        if self._on_notification is not None:
            raise RuntimeError("these upstream events have a listener already")
        self._on_notification, self._on_catalog_changed = on_notification, on_catalog_changed

    async def notification(self, server: str, method: str, params: dict[str, Any]) -> None:
        """A notification `server` sent on its own (log messages, resource updates)."""
        if self._on_notification is not None:
            await self._on_notification(server, method, params)

    async def catalog_changed(self, server: str, kind: str) -> None:
        """`server`'s catalog changed (`kind`: "all" at a start, else the list that changed)."""
        if self._on_catalog_changed is not None:
            await self._on_catalog_changed(server, kind)
