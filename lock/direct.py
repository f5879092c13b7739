"""Launching an npx / uvx entry straight from the environment its runner installed.

`npx -y pkg@1.0` and `uvx --from pkg==1.0 cmd` look the package up again on
every start (registry metadata, resolution), which costs seconds per server
when a whole profile starts at once. `servers install` already fills the
runner's cache; its offline check also asks the runner where that environment
is (`sys.prefix` in uv's environment, the bin folder npm exec puts on PATH).
The command found there is written to the cache (`lock.install_lookup.remember`),
and the gateway runs it directly, with the entry's own arguments and
environment (`lock.install_lookup.direct_spec`). If that environment has gone (a
cache cleaned), the entry's own command is used, as written in the lock.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcpgw.lock.launchers import Launch, split_npm_spec, warm_command

MARK = "MCPGW-WHERE="


def locate_command(launch: Launch) -> list[str]:
    """The warm command, but printing where the environment lives (`MARK` + path)."""
    warm = warm_command(launch)
    if launch.runner == "uvx":
        return [*warm[:-3], "python", "-c", f"import sys; print({MARK!r} + sys.prefix)"]
    return [*warm[:-1], "node", "-e", f"console.log({MARK!r} + process.env.PATH)"]


def direct_argv(launch: Launch, where: str) -> list[str] | None:
    """The server's command inside the environment `where` (what `locate_command` printed)."""
    if launch.runner == "uvx":
        executable = Path(where) / "bin" / launch.command[0]
        return [str(executable), *launch.command[1:]] if executable.is_file() else None
    bins = [Path(p) for p in where.split(os.pathsep) if "/_npx/" in p and p.endswith("node_modules/.bin")]
    if not bins:
        return None
    name, _ = split_npm_spec(launch.packages[0])
    command = _npm_bin(bins[0].parent / name, name)
    if command is None or not (bins[0] / command).exists():
        return None
    # npx runs the package's bin with the words after the package spec.
    rest = launch.command[1:] if launch.command and launch.command[0] == launch.packages[0] else launch.command
    return [str(bins[0] / command), *rest]


def _npm_bin(package_dir: Path, name: str) -> str | None:
    """The bin npx picks: the only one, or the one named like the package."""
    try:
        bin_field = json.loads((package_dir / "package.json").read_text()).get("bin")
    except (OSError, ValueError):
        return None
    unscoped = name.rsplit("/", 1)[-1]
    if isinstance(bin_field, str):
        return unscoped
    if isinstance(bin_field, dict) and bin_field:
        return next(iter(bin_field)) if len(bin_field) == 1 else (unscoped if unscoped in bin_field else None)
    return None
