"""An HTTP server's own command, running for the length of a build check.

The gateway connects to an HTTP entry's `url`; it does not start the entry's
`command`. A build check has to: it starts the command from the build, waits
(bounded) until the url's port takes connections, and stops the whole process
group when the check is done.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio

from gateway.config import ServerSpec
from gateway.live import child_env


class NotListening(Exception):
    """The command exited, or its port never opened in time: one line saying which."""


@asynccontextmanager
async def serving(spec: ServerSpec, timeout: float) -> AsyncIterator[None]:
    parts = urlsplit(spec.url or "")
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    if _open(host, port):  # something else holds the port: checking it would check the wrong server
        raise NotListening(f"port {port} is already in use by another process")
    from gateway.lock.install import stop_process

    process = await anyio.open_process([spec.command or "", *spec.args], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env=child_env(spec), cwd=spec.cwd, start_new_session=True)
    try:
        with anyio.move_on_after(timeout):
            while not _open(host, port):
                if process.returncode is not None:
                    raise NotListening(f"{spec.command} exited (code {process.returncode}) before listening on port {port}")
                await anyio.sleep(0.2)  # polling a port: there is no event to wait on
        if not _open(host, port):
            raise NotListening(f"nothing listened on port {port} within {timeout:g}s")
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await stop_process(process)


def _open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
