"""Fresh state per run: one upstream instance per lane, each with a state directory of its own.

A server with `isolation: run` (the default for servers flagged `stateful`) gets a
new instance for every run (lane), started on the run's first request and
stopped once the run has been idle for a while, or with the gateway.
`${RUN_STATE_DIR}` in its args, env or cwd names a temporary directory that
belongs to that instance alone (and is removed with it). One more instance,
started with the gateway, provides the catalog and lists; it never serves calls.
Hybrid replay uses the same mechanism to bring a fresh instance up to a run's
recorded state before that run's first live call.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio

from mcpgw.gateway.errors.tree import UpstreamUnavailable
from mcpgw.gateway.specs.server_spec import RUN_STATE_VAR, ServerSpec
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams.installs import Installs
from mcpgw.gateway.upstreams.upstream import CallOptions, Reply, Status, Upstream

logger = logging.getLogger(__name__)
_TOKEN = "${%s}" % RUN_STATE_VAR


def uses_state_dir(spec: ServerSpec) -> bool:
    return any(_TOKEN in v for v in (*spec.args, *spec.env_values.values(), spec.cwd or ""))


def with_state_dir(spec: ServerSpec, directory: str, installs: Installs) -> ServerSpec:
    """The spec with `${RUN_STATE_DIR}` replaced by `directory`; an installed npx / uvx entry is
    first pointed at its installed environment, whose record is keyed by the lock's own words
    (with the placeholder), which the substitution would change."""
    if spec.transport == "stdio" and spec.build is None:
        spec = installs.direct_spec(spec)

    def sub(text: str) -> str:
        return text.replace(_TOKEN, directory)

    return replace(
        spec,
        args=tuple(sub(a) for a in spec.args),
        cwd=sub(spec.cwd) if spec.cwd else None,
        env_values={k: sub(v) for k, v in spec.env_values.items()},
    )


def state_dir(server: str) -> str:
    return tempfile.mkdtemp(prefix=f"mcpgw-{server}-")


@dataclass
class _Instance:
    upstream: Upstream
    directory: str
    last_used: float
    inflight: int = 0


# make(spec, provides_catalog) -> one instance of the server
MakeUpstream = Callable[[ServerSpec, bool], Upstream]


class PerRunUpstream:
    """An `Upstream` and `PerRunInstances`: a fresh instance per lane, and one more for the catalog."""

    def __init__(
        self,
        spec: ServerSpec,
        make: MakeUpstream,
        installs: Installs,
        *,
        idle_timeout: float,
        start_timeout: float,
        on_idle_stop: Callable[[str], None] | None = None,
    ) -> None:
        self.name = spec.id
        self.spec = spec
        self._make = make
        self._installs = installs
        self._idle_timeout = idle_timeout
        self._start_timeout = start_timeout
        self._catalog_dir = state_dir(spec.id)
        self._catalog_instance = make(with_state_dir(spec, self._catalog_dir, installs), True)
        self._instances: dict[str, _Instance] = {}
        self._starting: dict[str, anyio.Lock] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self.instances_started = 0
        self.on_idle_stop = on_idle_stop  # gateway.upstreams.upstream.PerRunInstances

    # Lists, catalog and status are the catalog instance's.
    @property
    def status(self) -> Status:
        return self._catalog_instance.status

    @property
    def catalog(self) -> ServerCatalog | None:
        return self._catalog_instance.catalog

    @property
    def run_instances(self) -> int:
        """Instances serving runs now (the catalog instance aside)."""
        return len(self._instances)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await tg.start(self._catalog_instance.run)
                task_status.started()
                tg.start_soon(self._stop_idle)
        finally:
            self._tg = None
            shutil.rmtree(self._catalog_dir, ignore_errors=True)
            for instance in self._instances.values():
                shutil.rmtree(instance.directory, ignore_errors=True)
            self._instances.clear()

    async def wait_ready(self, timeout: float) -> None:
        await self._catalog_instance.wait_ready(timeout)

    async def aclose(self) -> None:
        for instance in list(self._instances.values()):
            await instance.upstream.aclose()
        await self._catalog_instance.aclose()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def request(self, method: str, params: dict[str, Any], options: CallOptions | None = None) -> Reply:
        options = options or CallOptions()
        instance = await self._instance(options.lane)
        instance.inflight += 1
        try:
            return await instance.upstream.request(method, params, options)
        finally:
            instance.inflight -= 1
            instance.last_used = time.monotonic()

    async def discard(self, lane: str) -> None:
        """Stop the lane's instance (its state is gone); the lane's next request starts a fresh one."""
        instance = self._instances.pop(lane, None)
        if instance is not None:
            await instance.upstream.aclose()
            shutil.rmtree(instance.directory, ignore_errors=True)

    def has_instance(self, lane: str) -> bool:
        return lane in self._instances

    async def _instance(self, lane: str) -> _Instance:
        instance = self._instances.get(lane)
        if instance is not None:
            return instance
        async with self._starting.setdefault(lane, anyio.Lock()):
            instance = self._instances.get(lane)
            if instance is not None:
                return instance
            if self._tg is None:
                raise UpstreamUnavailable(self.name, "the gateway is not running this server")
            directory = state_dir(self.name)
            upstream = self._make(with_state_dir(self.spec, directory, self._installs), False)
            await self._tg.start(upstream.run)
            await upstream.wait_ready(self._start_timeout)
            if upstream.status.state != "ready":
                await upstream.aclose()
                shutil.rmtree(directory, ignore_errors=True)
                raise UpstreamUnavailable(
                    self.name, f"a fresh instance for run {lane!r} did not start: {upstream.status.reason}"
                )
            self.instances_started += 1
            instance = self._instances[lane] = _Instance(upstream, directory, time.monotonic())
            logger.info("server %s: fresh instance for run %r (state in %s)", self.name, lane, directory)
        self._starting.pop(lane, None)
        return instance

    async def _stop_idle(self) -> None:
        while True:
            await anyio.sleep(max(1.0, min(30.0, self._idle_timeout / 4)))
            now = time.monotonic()
            for lane, instance in list(self._instances.items()):
                if instance.inflight == 0 and now - instance.last_used > self._idle_timeout:
                    logger.info(
                        "server %s: run %r idle for %.0f s; its instance stops",
                        self.name,
                        lane,
                        now - instance.last_used,
                    )
                    await self.discard(lane)
                    if self.on_idle_stop is not None:  # the run's recorded history no longer matches any state
                        self.on_idle_stop(lane)
