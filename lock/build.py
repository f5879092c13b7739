"""Build one source entry into the cache and prove it runs.

Steps: the repository tree at the pinned commit (`sources.source_tree`), a
copy of the entry's folder into its own build directory (builds never share or
touch the extracted tree), the recipe's commands in that copy, then a start:
the server must answer initialize and tools/list from its build. Only then is
the marker written that makes the gateway launch it. A failure names the step
and the last lines the step wrote.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcpgw.gateway.upstreams.child_env import child_env
from mcpgw.lock.config import ServerSpec
from mcpgw.lock.install_lookup import BUILT_MARKER, FAILED_MARKER, build_dir, built_info, installed_spec
from mcpgw.lock.processes import run_process  # one process runner for every install step
from mcpgw.lock.recipe_syntax import RecipeError, parse_recipe
from mcpgw.lock.recipes import build_env, build_steps
from mcpgw.lock.sources import SourceError, source_tree


@dataclass
class BuildResult:
    ok: bool
    step: str  # the step that failed, or "done"
    detail: str
    tools: int = 0


async def build_source(
    spec: ServerSpec,
    cache: Path,
    sources: list[Path],
    timeout: float,
    on_step: Callable[[str], None] | None = None,
    verify_timeout: float = 120.0,
) -> BuildResult:
    result = await _build(spec, cache, sources, timeout, on_step, verify_timeout)
    if not result.ok:  # kept so the gateway can say why the server is not there
        failed = build_dir(spec, cache) / FAILED_MARKER
        failed.parent.mkdir(parents=True, exist_ok=True)
        failed.write_text(json.dumps({"step": result.step, "detail": result.detail, "at": time.time()}))
    return result


async def _build(
    spec: ServerSpec,
    cache: Path,
    sources: list[Path],
    timeout: float,
    on_step: Callable[[str], None] | None,
    verify_timeout: float,
) -> BuildResult:
    assert spec.source is not None
    step = on_step or (lambda _: None)
    home = build_dir(spec, cache)
    info = built_info(spec, cache)
    if info is not None:
        return BuildResult(
            True,
            "done",
            f"already built ({info.get('tools', '?')} tools, built in {info.get('seconds', 0):.0f}s)",
            int(info.get("tools") or 0),
        )
    began = time.monotonic()
    step(f"source {spec.source.repo}@{spec.source.commit[:7]}")
    try:
        tree = await source_tree(spec.source, cache, sources)
    except SourceError as exc:
        return BuildResult(False, "fetch", str(exc))
    folder = tree / spec.source.path
    if not folder.is_dir():
        return BuildResult(
            False, "fetch", f"no folder {spec.source.path!r} in {spec.source.repo}@{spec.source.commit[:7]}"
        )
    if home.exists():
        shutil.rmtree(home)  # an unfinished earlier build
    home.mkdir(parents=True)
    src, env_dir = home / "src", home / "env"
    await anyio.to_thread.run_sync(lambda: shutil.copytree(folder, src, symlinks=True))
    recipe = parse_recipe(spec.build or {})
    env = build_env(src, env_dir, child_env(spec, registry=True))
    try:
        steps = build_steps(recipe, src, env_dir)
    except RecipeError as exc:
        return BuildResult(False, "recipe", str(exc))
    for name, argv in steps:
        step(name)
        started = time.monotonic()
        code, tail = await run_process(argv, env, str(src), timeout)
        if code != 0:
            why = f"exited {code}" if code is not None else "did not finish"
            return BuildResult(False, name, f"{why} after {time.monotonic() - started:.0f}s: {_gist(tail)}")
    step("verifying: start + tools/list")
    (home / BUILT_MARKER).write_text(json.dumps({"pending": True}))  # lets installed_spec resolve it for the probe
    result = await _verify(spec, cache, verify_timeout)
    if not result.ok:
        (home / BUILT_MARKER).unlink(missing_ok=True)
        return result
    marker = {
        "source": spec.source.label,
        "commit": spec.source.commit,
        "recipe": spec.build,
        "tools": result.tools,
        "built_at": time.time(),
        "seconds": round(time.monotonic() - began, 1),
    }
    (home / BUILT_MARKER).write_text(json.dumps(marker))
    return result


# npm's answer for a package the registry does not serve, e.g. "The requested resource
# 'redact-pii-light@https://registry.npmjs.org/redact-pii-light/-/redact-pii-light-1.0.0.tgz' could not be found"
_NPM_404 = re.compile(r"resource '(@?[^@'\s]+)@(?:\S*-)?(\d[^'/]*?)(?:\.tgz)?' could not be found")


def _gist(tail: str) -> str:
    """The step's last lines, or the one fact they spell out at length (a package the registry lacks)."""
    gone = _NPM_404.search(tail)
    if gone:
        return f"the npm registry has no {gone.group(1)}@{gone.group(2)} (404)"
    return tail


async def _verify(spec: ServerSpec, cache: Path, timeout: float) -> BuildResult:
    from mcpgw.lock.probe import probe_servers

    runnable = installed_spec(spec, cache, pending=True)
    assert runnable is not None
    if runnable.env_required:  # a key is needed to run, not to build: built, but not started here
        runnable = _without_required_env(runnable)
    [probe] = await probe_servers(
        [runnable], timeout=timeout
    )  # an HTTP entry's command included (gateway.upstreams.http_launch)
    if not probe.ready or probe.catalog is None:
        if "network" in spec.flags and "MCPError: " in (probe.reason or ""):
            # It started and answered over MCP, with an error: its tools/list fetches from the
            # internet (the `network` flag). That is as far as a check without network goes.
            answer = (probe.reason or "").split("MCPError: ", 1)[1]
            return BuildResult(True, "done", f"built; it answers, but its tools/list needs the network ({answer})")
        return BuildResult(False, "verify", f"built, but it did not answer tools/list: {probe.state}: {probe.reason}")
    names = [t.get("name") for t in probe.catalog.tools]
    return BuildResult(True, "done", f"built; {len(names)} tools: {' '.join(map(str, names))}", len(names))


def _without_required_env(spec: ServerSpec) -> ServerSpec:
    """The start check of a server that wants a key: give it an empty placeholder so it
    can list its tools (listing needs no key; calling does)."""
    from dataclasses import replace

    values = {k: (v if "${" not in v else "") for k, v in spec.env_values.items()}
    return replace(spec, env_required=(), env_values=values)
