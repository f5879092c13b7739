"""`mcpgw servers install`: fetch every package of a profile into its runner's cache, ahead of time.

For each entry launched with npx or uvx and pinned to a registry version, run
the runner with the entry's own specs, options and environment, but a command
that exits at once (`lock.launchers.warm_command`), then run it again
with the registry switched off (`npm_config_offline=true`, `UV_OFFLINE=1`): an
entry is "installed" only when that offline run succeeds, that is when a later
start needs no registry. The offline run also says where the environment is,
so the gateway can start the server from it directly (`lock.direct`).
Entries with a `source:` and a `build:` recipe are built from their pinned
commit instead (`lock.build`). Runs concurrently, at most `--jobs` at a
time, each step bounded by `--timeout`; a failure names the server, the step
and its last output lines, and the others go on. Other entries are skipped,
with the reason. Exit status: 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.upstreams.child_env import child_env  # the exact environment the gateway gives the server
from mcpgw.lock.bytecode import compile_command
from mcpgw.lock.config import ServerSpec, default_lock
from mcpgw.lock.direct import direct_argv, locate_command
from mcpgw.lock.install_lookup import cache_root, remember
from mcpgw.lock.launchers import Launch, infer_pin, parse_launch, warm_command
from mcpgw.lock.lockfile import DEFAULT_LOCK, open_lock
from mcpgw.lock.processes import run_process

_OFFLINE = {"npx": {"npm_config_offline": "true"}, "uvx": {"UV_OFFLINE": "1"}}
_FILESYSTEM = "@modelcontextprotocol/server-filesystem"


@dataclass
class Plan:
    spec: ServerSpec
    skip: str | None = None
    launch: Launch | None = None
    warm: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)  # directories the server needs before it starts
    warning: str | None = None

    @property
    def package(self) -> str:
        if self.spec.source is not None and self.spec.build is not None:
            return f"source {self.spec.source.label}"
        pin = self.spec.pin
        return f"{pin.registry} {pin.package}@{pin.version}" if pin and pin.package else ""


@dataclass
class Outcome:
    server: str
    result: str  # installed | failed | skipped
    package: str
    seconds: float
    detail: str


def make_plan(spec: ServerSpec) -> Plan:
    """What installing one entry means, or why it is skipped."""
    if spec.build is not None:
        return Plan(spec)  # built from its source commit (lock.build)
    if spec.transport != "stdio" and not spec.command:
        return Plan(spec, skip=f"{spec.transport} server with no launch command: nothing to install")
    if spec.pin is None or not spec.pin.registry or not spec.pin.package:
        return Plan(spec, skip="no registry pin (runs from a source tree or an unpinned command)")
    launch = parse_launch(spec.command, spec.args)
    if launch is None:
        return Plan(spec, skip=f"not launched with npx or uvx (command {spec.command!r})")
    env = child_env(spec, registry=True)
    dirs = []
    if launch.runner == "npx" and launch.packages[0].startswith(_FILESYSTEM + "@"):
        dirs = [a for a in launch.command[1:] if a.startswith("/")]  # its allowed roots must exist to start
    runs = infer_pin(spec.command, spec.args)
    mismatch = None
    if runs is not None and (runs.package, runs.version) != (spec.pin.package, spec.pin.version):
        mismatch = (
            f"the pin says {spec.pin.package}@{spec.pin.version} but the command runs {runs.package}@{runs.version}"
        )
    return Plan(spec, launch=launch, warm=warm_command(launch), env=env, dirs=dirs, warning=mismatch)


async def install(
    plan: Plan,
    timeout: float,
    on_step: Callable[[str], None] | None = None,
    sources: list[Path] | None = None,
    cache: Path | None = None,
) -> Outcome:
    started = time.monotonic()
    spec = plan.spec

    def outcome(result: str, detail: str) -> Outcome:
        return Outcome(spec.id, result, plan.package, time.monotonic() - started, detail)

    if plan.skip is not None:
        return outcome("skipped", plan.skip)
    if spec.build is not None:
        from mcpgw.lock.build import build_source
        from mcpgw.lock.install_lookup import cache_root

        built = await build_source(spec, cache or cache_root(), sources or [], timeout, on_step)
        if built.ok:
            return outcome("installed", built.detail)
        return outcome("failed", f"step {built.step}: {built.detail}")
    assert plan.launch is not None
    notes = []
    for directory in plan.dirs:
        if not Path(directory).is_dir():
            try:
                Path(directory).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                return outcome("failed", f"cannot create {directory}: {exc}")
            notes.append(f"created {directory}")
    cwd = spec.cwd if spec.cwd and Path(spec.cwd).is_dir() else None
    if on_step:
        on_step(f"fetching {plan.package}")
    code, tail = await run_process(plan.warm, plan.env, cwd, timeout)
    if code != 0:
        return outcome("failed", f"{' '.join(plan.warm[:3])} ... exited {code}: {tail}" if code is not None else tail)
    if on_step:
        on_step("checking it starts offline")
    where: list[str] = []
    code, tail = await run_process(
        locate_command(plan.launch), {**plan.env, **_OFFLINE[plan.launch.runner]}, cwd, min(timeout, 120), found=where
    )
    if code != 0:
        return outcome("failed", f"fetched, but an offline run still needs the registry: {tail}")
    argv = direct_argv(plan.launch, where[-1]) if where else None
    if where and plan.launch.runner == "uvx" and (Path(where[-1]) / "bin" / "python").exists():
        compile_argv = compile_command(Path(where[-1]))
        if on_step:
            on_step("compiling its bytecode")
        code, tail = await run_process(compile_argv, plan.env, cwd, timeout)
        notes.append("bytecode compiled" if code == 0 else f"bytecode not compiled ({tail or 'timed out'})")
    if argv is not None:
        remember(spec, argv, cache)
        notes.append(f"launches {argv[0]} directly")
    else:
        notes.append(f"launches through {plan.launch.runner} (its environment was not found)")
    if plan.warning:
        notes.append(f"warning: {plan.warning}")
    return outcome("installed", "; ".join(["cached, starts offline", *notes]))


# -- the command ---------------------------------------------------------------------


def cmd_install(args: argparse.Namespace) -> int:
    from mcpgw.lock.sources import sources_dirs

    lock = open_lock(args.config or default_lock() or DEFAULT_LOCK)
    plans = [make_plan(spec) for spec in lock.select(args.profile, args.servers)]
    sources = sources_dirs(args.sources)
    if any(p.skip is None for p in plans):
        check_cache(cache_root())
    outcomes = anyio.run(lambda: _install_all(plans, args.jobs, args.timeout, sources))
    chosen = (
        f"servers {' '.join(args.servers)}"
        if args.servers
        else f"profile {args.profile or lock.config.default_profile}"
    )
    _report(outcomes, lock.source, chosen)
    return 1 if any(o.result == "failed" for o in outcomes) else 0


def check_cache(cache: Path) -> None:
    """Every install is remembered (or built) in the cache folder: one clear line before anything is fetched,
    not an exception group from each server's task."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        problem = None if os.access(cache, os.W_OK) else "not writable"
    except OSError as exc:
        problem = "not a folder" if cache.exists() and not cache.is_dir() else exc.strerror or str(exc)
    if problem is not None:
        explicit = os.environ.get("MCPGW_CACHE")
        where = f"MCPGW_CACHE={explicit}" if explicit else f"the cache folder {cache}"
        raise GatewayError(f"cannot keep installs in {where} ({problem}): set MCPGW_CACHE to a folder you can write")


async def _install_all(
    plans: list[Plan], jobs: int, timeout: float, sources: list[Path] | None = None
) -> list[Outcome]:
    from mcpgw.lock.progress import progress_bar

    limiter = anyio.CapacityLimiter(max(1, jobs))
    results: dict[str, Outcome] = {}
    with progress_bar() as progress:
        # Not a terminal (a log, CI, a pipe): no bar, but one plain line per step and per result on stderr.
        plain = not progress.console.is_terminal
        count = sum(p.skip is None for p in plans)
        overall = progress.add_task(f"installing {count} server(s)", total=len(plans))
        if plain:
            print(f"mcpgw: installing {count} server(s), {max(1, jobs)} at a time", file=sys.stderr, flush=True)
        finished = 0

        async def one(p: Plan) -> None:
            nonlocal finished
            if p.skip is not None:
                results[p.spec.id] = await install(p, timeout)
                progress.advance(overall)
                return
            row = progress.add_task(f"  {p.spec.id}: waiting", total=None)
            async with limiter:

                def step(text: str) -> None:
                    progress.update(row, description=f"  {p.spec.id}: {text}")
                    if plain:
                        print(f"mcpgw: {p.spec.id}: {text}", file=sys.stderr, flush=True)

                results[p.spec.id] = outcome = await install(p, timeout, step, sources)
            progress.remove_task(row)
            colour = "green" if outcome.result == "installed" else "red"
            finished += 1
            if plain:
                print(
                    f"mcpgw: {p.spec.id}: {outcome.result} in {outcome.seconds:.1f}s ({finished} of {count} done)",
                    file=sys.stderr,
                    flush=True,
                )
            else:
                progress.console.print(f"  {p.spec.id:<28} [{colour}]{outcome.result}[/] {outcome.seconds:5.1f}s")
            progress.advance(overall)

        async with anyio.create_task_group() as tg:
            for p in plans:
                tg.start_soon(one, p)
    return [results[p.spec.id] for p in plans]


def _report(outcomes: list[Outcome], source: str, profile: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    counts = {r: sum(o.result == r for o in outcomes) for r in ("installed", "failed", "skipped")}
    title = (
        f"servers install: {source}"
        + (f", {profile}" if profile else "")
        + f": {counts['installed']} installed, {counts['failed']} failed, {counts['skipped']} skipped"
    )
    table = Table(title=title)
    for column in ("server", "result", "package", "time", "detail"):
        table.add_column(column, overflow="fold")
    colours = {"installed": "green", "failed": "red", "skipped": "white"}
    for o in outcomes:
        table.add_row(
            o.server,
            f"[{colours[o.result]}]{o.result}[/]",
            o.package,
            f"{o.seconds:.1f}s" if o.result != "skipped" else "",
            o.detail,
        )
    Console(file=sys.stdout, width=160).print(table)
    for o in outcomes:  # one unwrapped line per failure, for logs and searching
        if o.result == "failed":
            print(f"mcpgw: {o.server}: install failed: {o.detail}", file=sys.stderr)
