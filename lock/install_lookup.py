"""Where `mcpgw servers install` leaves its work, and how the gateway starts a server from it.

The rest of `lock/` makes installs (fetching, building, verifying); this module finds them. The
core asks through `gateway.upstreams.installs.Installs`, answered by `CacheInstalls`, which the
composition roots hand to the live upstreams. Two kinds of install, both under the cache folder:

- a source entry is built into `builds/<id>-<key>/` (`src/` the tree, `env/` its environment); a
  marker file says the build finished and was verified, another why it failed;
- an npx / uvx entry's installed environment is remembered in `direct/<id>-<key>.json` (the
  command found there), so the gateway runs it without the runner's package look-up, which
  costs seconds per server when a whole profile starts at once.

Each key hashes everything that decides the content, so a changed pin builds (or locates) afresh
beside the old one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcpgw.gateway.specs.server_spec import ServerSpec

BUILT_MARKER = ".mcpgw-build.json"
FAILED_MARKER = ".mcpgw-failed.json"


def cache_root() -> Path:
    """`MCPGW_CACHE`, else the user's cache folder: never inside the repository."""
    explicit = os.environ.get("MCPGW_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpgw"


# -- source entries, built from a commit -------------------------------------------------


def build_key(spec: ServerSpec) -> str:
    assert spec.source is not None
    content = {"repo": spec.source.repo, "commit": spec.source.commit, "path": spec.source.path, "build": spec.build}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def build_dir(spec: ServerSpec, root: Path | None = None) -> Path:
    return (root or cache_root()) / "builds" / f"{spec.id}-{build_key(spec)}"


def built_info(spec: ServerSpec, root: Path | None = None, *, pending: bool = False) -> dict[str, Any] | None:
    """The marker a finished, verified build leaves; None when the entry is not built
    (a build still being verified counts only when `pending` is asked for)."""
    try:
        info = json.loads((build_dir(spec, root) / BUILT_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return info if pending or not info.get("pending") else None


def failed_info(spec: ServerSpec, root: Path | None = None) -> dict[str, Any] | None:
    """Why the last build of this entry failed, when it did."""
    try:
        info: dict[str, Any] = json.loads((build_dir(spec, root) / FAILED_MARKER).read_text())
        return info
    except (OSError, ValueError):
        return None


def installed_spec(spec: ServerSpec, root: Path | None = None, *, pending: bool = False) -> ServerSpec | None:
    """The entry as it runs from its build: command found in the build's own environment,
    working directory inside the built tree. None when it has not been built.
    The result has no `build` left: it is ready to launch as it is."""
    if spec.source is None or spec.build is None:
        return spec
    if built_info(spec, root, pending=pending) is None:
        return None
    home = build_dir(spec, root)
    tree, env_dir = home / "src", home / "env"
    command = spec.command or ""
    if command and "/" not in command:
        path = os.pathsep.join([str(env_dir / "bin"), str(tree / "node_modules" / ".bin"), os.environ.get("PATH", "")])
        command = shutil.which(command, path=path) or command
    cwd = tree / spec.cwd if spec.cwd else tree
    values = dict(spec.env_values)
    values.setdefault(
        "PATH",
        os.pathsep.join(
            [str(env_dir / "bin"), str(tree / "node_modules" / ".bin"), os.environ.get("PATH", os.defpath)]
        ),
    )
    if (env_dir / "bin" / "python").exists():
        values.setdefault("VIRTUAL_ENV", str(env_dir))
    return replace(spec, command=command, cwd=str(cwd), env_values=values, build=None)


# -- npx / uvx entries, started from the runner's installed environment -------------------


def _direct_record(spec: ServerSpec, root: Path | None) -> Path:
    content = json.dumps([spec.command, list(spec.args), spec.env_values], sort_keys=True)
    key = hashlib.sha256(content.encode()).hexdigest()[:16]
    return (root or cache_root()) / "direct" / f"{spec.id}-{key}.json"


def remember(spec: ServerSpec, argv: list[str], root: Path | None = None) -> None:
    """Record the command install found in the entry's environment (read back by `direct_spec`)."""
    path = _direct_record(spec, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"argv": argv}))


RUNNERS = ("npx", "uvx")


def not_installed(spec: ServerSpec, root: Path | None = None) -> bool:
    """An npx / uvx entry started with the registries off (`offline`) that `servers install` never located:
    its runner can only fail (npm's ENOTCACHED, uv's "network was disabled") unless the package happens
    to be in the runner's cache anyway, so a failed start of it is reported as not installed."""
    if not spec.offline or spec.transport != "stdio" or os.path.basename(spec.command or "") not in RUNNERS:
        return False
    return _recorded_argv(spec, root) is None


def _recorded_argv(spec: ServerSpec, root: Path | None) -> list[str] | None:
    try:
        argv = json.loads(_direct_record(spec, root).read_text())["argv"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return argv if argv and Path(argv[0]).exists() else None


def direct_spec(spec: ServerSpec, root: Path | None = None) -> ServerSpec:
    """The entry launched from its installed environment when install found one; else as written
    (also when MCPGW_NO_DIRECT is set: the benchmark's way to compare the two)."""
    if os.environ.get("MCPGW_NO_DIRECT"):
        return spec
    argv = _recorded_argv(spec, root)
    if argv is None:
        return spec
    return replace(spec, command=argv[0], args=tuple(argv[1:]))


class CacheInstalls:
    """The installs under the cache folder, as the core asks for them (gateway.upstreams.installs.Installs).
    `root` None: `cache_root()`, looked up at each question."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    def installed_spec(self, spec: ServerSpec) -> ServerSpec | None:
        return installed_spec(spec, self.root)

    def failed_info(self, spec: ServerSpec) -> dict[str, Any] | None:
        return failed_info(spec, self.root)

    def direct_spec(self, spec: ServerSpec) -> ServerSpec:
        return direct_spec(spec, self.root)

    def not_installed(self, spec: ServerSpec) -> bool:
        return not_installed(spec, self.root)
