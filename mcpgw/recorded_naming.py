"""The naming a recording was made under, kept in its info and used again on replay.

Tool names are what a client (and a model's recorded prompts) saw. `--naming auto` depends on how many servers
a gateway is in front of, and a replay can be in front of fewer or more than the recording was (an overlay
that added a server, `--servers`), so the chosen naming (prefix | bare | benchmark, never auto) and the lock's
separator are kept in the cassette's info as `naming`. A replay or hybrid serve without `--naming` names tools
as the recording did: the overlay's naming if it has one (the later run), else the base's; a recording made
before this was kept names tools as `--naming auto` does. A `--naming` given wins.
"""

from __future__ import annotations

from typing import Any

from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.naming import chosen_mode

NAMING_KEY = "naming"


def naming_used(settings: Settings, servers: int, recorded_info: dict[str, Any] | None) -> dict[str, str]:
    """{"mode", "separator"} a gateway in front of `servers` servers names its tools with."""
    kept = (recorded_info or {}).get(NAMING_KEY)
    if settings.naming is None and _valid(kept):
        return {"mode": kept["mode"], "separator": kept["separator"]}
    return {"mode": chosen_mode(settings.naming or "auto", servers), "separator": settings.separator}


def apply(settings: Settings, naming: dict[str, str]) -> None:
    """The router names tools with this (gateway.routing.router_core)."""
    settings.naming_mode = naming["mode"]
    settings.separator = naming["separator"]


def adds_to_overlay(settings: Settings) -> bool:
    """A replay that can record something into its overlay (an answer or a model exchange)."""
    return settings.mode == "hybrid" or settings.on_miss != "refuse" or settings.model_mode in ("live", "hybrid")


def _valid(kept: Any) -> bool:
    return (isinstance(kept, dict) and kept.get("mode") in ("prefix", "bare", "benchmark")
            and isinstance(kept.get("separator"), str) and bool(kept["separator"]))
