"""The naming a recording was made under, kept in its info and used again on replay.

Tool names are what a client (and a model's recorded prompts) saw. `--naming auto` depends on how many servers
a gateway is in front of, and a replay can be in front of fewer or more than the recording was (an overlay
that added a server, `--servers`), so the chosen naming (prefix | bare | benchmark, never auto) and the lock's
separator are kept in the cassette's info as `naming`. A replay or hybrid serve without `--naming` names tools
as the recording did: the overlay's naming if it has one (the later run), else the base's; a recording made
before this was kept names tools as `--naming auto` does. A `--naming` given wins.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from mcpgw.cassette.cassette import Cassette
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.naming import chosen_mode

NAMING_KEY = "naming"


def choose_naming(settings: Settings, servers: int, recorded_info: dict[str, Any] | None) -> dict[str, str]:
    """{"mode", "separator"} a gateway in front of `servers` servers names its tools with (the composition root
    hands them to its router through the settings it builds from them)."""
    kept = (recorded_info or {}).get(NAMING_KEY)
    if settings.naming is None and _valid(kept):
        naming = {"mode": kept["mode"], "separator": kept["separator"]}
    else:
        naming = {"mode": chosen_mode(settings.naming or "auto", servers), "separator": settings.separator}
    return naming


def replay_naming(
    settings: Settings, servers: int, recorded: dict[str, Any], overlay: Cassette | None
) -> dict[str, str]:
    """A replay's naming; what it adds to an overlay is made under it, so base + overlay replays it under the
    same names (kept in the overlay when it is not the naming the recording already says)."""
    naming = choose_naming(settings, servers, recorded)
    adds = settings.mode == "hybrid" or settings.on_miss != "refuse" or settings.model_mode in ("live", "hybrid")
    if overlay is not None and adds and naming != recorded.get(NAMING_KEY):
        overlay.write_info({}, naming=naming)
    return naming


def _valid(kept: Any) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(kept, dict)
        and kept.get("mode") in ("prefix", "bare", "benchmark")
        and isinstance(kept.get("separator"), str)
        and bool(kept["separator"])
    )
