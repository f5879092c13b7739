"""An HTTP entry's own command: started before the gateway connects to its `url`.

An entry with `transport: http` (or `sse`) and a `command` is a server the
gateway runs itself, as MCP-Bench's commands.json runs Google Maps: the gateway
starts the command in its own process group, waits (bounded) until the url's
port takes connections, connects, and stops the whole group when the
connection ends. A port some other process already holds is refused rather
than used: connecting there would talk to the wrong server. The build check of
`servers install` uses the same launcher.

`${FREE_PORT}` in the entry's url, args, env or headers is a loopback port free at
that launch (`with_free_port`), so two gateways on one machine never want the
same port. Whether the command then listens on loopback only is its own
affair: the lock flags `all_interfaces` on one that listens on every interface.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from urllib.parse import urlsplit

import anyio

from mcpgw.gateway.specs.server_spec import FREE_PORT_VAR, ServerSpec
from mcpgw.gateway.upstreams.child_env import child_env
from mcpgw.gateway.upstreams.stdio_transport import LIVE_GROUPS, TERM_GRACE


class NotListening(Exception):
    """The command exited, or its port never opened in time: one line saying which."""


_PORT_TOKEN = "${%s}" % FREE_PORT_VAR


def uses_free_port(spec: ServerSpec) -> bool:
    return any(
        _PORT_TOKEN in v for v in (spec.url or "", *spec.args, *spec.env_values.values(), *spec.headers.values())
    )


def with_free_port(spec: ServerSpec) -> ServerSpec:
    """The spec with `${FREE_PORT}` replaced by a loopback port nobody listens on now (the command is
    started right after; a port taken in between is refused by `serving`, and the next start picks again)."""
    if not uses_free_port(spec):
        return spec
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])

    def sub(text: str) -> str:
        return text.replace(_PORT_TOKEN, port)

    return replace(
        spec,
        url=sub(spec.url or ""),
        args=tuple(sub(a) for a in spec.args),
        env_values={k: sub(v) for k, v in spec.env_values.items()},
        headers={k: sub(v) for k, v in spec.headers.items()},
    )


@asynccontextmanager
async def serving(spec: ServerSpec, timeout: float) -> AsyncIterator[None]:
    parts = urlsplit(spec.url or "")
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    if _open(host, port):  # something else holds the port: checking it would check the wrong server
        raise NotListening(f"port {port} is already in use by another process")
    process = await anyio.open_process(
        [spec.command or "", *spec.args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=child_env(spec),
        cwd=spec.cwd,
        start_new_session=True,
    )
    LIVE_GROUPS.add(process.pid)  # a forced exit of the gateway kills it too
    try:
        with anyio.move_on_after(timeout):
            while not _open(host, port):
                if process.returncode is not None:
                    raise NotListening(
                        f"{spec.command} exited (code {process.returncode}) before listening on port {port}"
                    )
                await anyio.sleep(0.2)  # polling a port: there is no event to wait on
        if not _open(host, port):
            raise NotListening(f"nothing listened on port {port} within {timeout:g}s")
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)
        LIVE_GROUPS.discard(process.pid)


async def _stop(process: anyio.abc.Process) -> None:
    """The whole process group: SIGTERM, then SIGKILL after a grace period (an HTTP server does not
    end when its stdin closes, so there is no point waiting for that)."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, TERM_GRACE)):
        if process.returncode is not None:
            break
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with anyio.move_on_after(grace):
            await process.wait()
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # stragglers it left in its group
    await process.aclose()


def _open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
