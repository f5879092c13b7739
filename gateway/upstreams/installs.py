"""What a live upstream asks of the installs at its start (`Installs`); the lock's cache answers
(mcpgw.lock.install_lookup.CacheInstalls), handed in by the composition roots: the core knows no install format."""

from __future__ import annotations

from typing import Any, Protocol

from mcpgw.gateway.specs.server_spec import ServerSpec


class Installs(Protocol):
    """Where an installed entry starts from: a source entry's build, an npx / uvx entry's installed environment."""

    def installed_spec(self, spec: ServerSpec) -> ServerSpec | None:
        """A source entry as it runs from its build (no `build` left); None when it has not been built."""

    def failed_info(self, spec: ServerSpec) -> dict[str, Any] | None:
        """Why the last build of a source entry failed, when it did."""

    def direct_spec(self, spec: ServerSpec) -> ServerSpec:
        """An npx / uvx entry launched from its installed environment when one was found; else as written."""

    def not_installed(self, spec: ServerSpec) -> bool:
        """An offline npx / uvx entry that install never located (a failed start of it is reported as such)."""
