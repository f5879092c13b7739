"""Running one install or build step: a process group with a time limit, its last lines kept."""

from __future__ import annotations

import collections
import os
import signal
import subprocess

import anyio
from anyio.streams.text import TextReceiveStream

from mcpgw.lock.direct import MARK

KILL_GRACE = 5.0


async def run_process(
    argv: list[str], env: dict[str, str], cwd: str | None, timeout: float, found: list[str] | None = None
) -> tuple[int | None, str]:
    """(exit code or None, the last lines it wrote); the process group is killed past `timeout`.
    Lines that start with `direct.MARK` go (without it) into `found`."""
    tail: collections.deque[str] = collections.deque(maxlen=6)
    try:
        process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return None, f"could not start {argv[0]}: {exc}"
    try:
        with anyio.move_on_after(timeout) as scope:
            assert process.stdout is not None
            pending = ""
            async for chunk in TextReceiveStream(process.stdout, errors="replace"):
                pending += chunk
                *lines, pending = pending.split("\n")
                _keep(lines, tail, found)
            _keep([pending], tail, found)
            await process.wait()
        if scope.cancelled_caught:
            return None, f"timed out after {timeout:g}s: " + _tail(tail)
        return process.returncode, _tail(tail)
    finally:
        with anyio.CancelScope(shield=True):
            await stop_process(process)


async def stop_process(process: anyio.abc.Process) -> None:
    """Its whole process group: TERM, then KILL after a grace period."""
    if process.returncode is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            with anyio.move_on_after(KILL_GRACE):
                await process.wait()
            if process.returncode is not None:
                break
    await process.aclose()


def _keep(lines: list[str], tail: collections.deque[str], found: list[str] | None) -> None:
    for line in (line.strip() for line in lines):
        if found is not None and line.startswith(MARK):
            found.append(line[len(MARK) :])
        elif line:
            tail.append(line)


def _tail(lines: collections.deque[str], limit: int = 400) -> str:
    text = " | ".join(lines)
    return text if len(text) <= limit else "..." + text[-limit:]
