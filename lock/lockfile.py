"""One lock file as the lock commands need it: its text, its config and each entry's `locked:` data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.lock import DEFAULT_LOCK
from mcpgw.lock import locked as locked_data
from mcpgw.lock.config import GatewayConfig, ServerSpec, parse_config, read_config_text
from mcpgw.lock.locked import Locked

__all__ = ["DEFAULT_LOCK", "LockFile", "open_lock"]


@dataclass
class LockFile:
    path: Path
    text: str
    config: GatewayConfig
    raw_servers: dict[str, Any]

    @property
    def source(self) -> str:
        return str(self.path)

    def select(self, profile: str | None, only: list[str] | None) -> list[ServerSpec]:
        return self.config.select(profile, only)

    def locked(self, server: str) -> Locked | None:
        entry = self.raw_servers.get(server)
        if not isinstance(entry, dict) or entry.get(locked_data.KEY) is None:
            return None
        return locked_data.parse(server, entry[locked_data.KEY], self.source)


def open_lock(path: str | Path) -> LockFile:
    """Read and validate a lock file (format v1); an `mcpServers` JSON is refused with the way out."""
    path = Path(path)
    source = str(path)
    text = read_config_text(path, " (create one with `mcpgw lock import <mcpServers.json>`)")
    config = parse_config(text, source)
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or "version" not in doc:
        raise ConfigError(source, None, "not a lock file; turn it into one with `mcpgw lock import`")
    raw = doc.get("servers") if isinstance(doc.get("servers"), dict) else {}
    return LockFile(path, text, config, {str(k): v for k, v in raw.items()})
