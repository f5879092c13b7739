"""A stdio transport for upstream servers, with the limits a gateway needs.

Compared with the SDK's `stdio_client`: the server runs in its own process
group; each stdout line is capped at `max_message_bytes` (an oversized
response becomes an error for the request it answers, found by its id, and
its bytes are discarded as they stream in); non-JSON lines on stdout are
reported, not fatal; the server's stderr is kept in a ring buffer so a crash
can be explained; shutdown closes stdin, waits, then SIGTERMs and SIGKILLs
the whole group, every wait bounded.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcpgw.gateway.encoding.json_text import compact
from mcpgw.gateway.errors.tree import RESPONSE_TOO_LARGE
from mcpgw.gateway.runtime.secrets import scrub

logger = logging.getLogger(__name__)

CLOSE_GRACE = 2.0
TERM_GRACE = 2.0
_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
# Only a top-level id counts: last member (`..."id":7}`, as TypeScript servers write it), or
# among the first members (`{"jsonrpc":"2.0","id":7,...`, as Python servers do). A nested
# "id" inside the result must never be taken for it.
_TAIL_ID_RE = re.compile(rb",\s*" + _ID + rb"\s*\}\s*$")
_HEAD_ID_RE = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID)


@dataclass
class ProcessInfo:
    pid: int
    stderr_tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=40))
    garbage_lines: int = 0
    returncode: int | None = None

    def last_words(self, n: int = 5) -> str:
        lines = [line for line in self.stderr_tail if line.strip()][-n:]
        return scrub(" | ".join(lines))  # servers print their keys; status reasons and logs must not


class _TooLarge(Exception):
    pass


class Inbox:
    """The server's messages, handed to one consumer as they are read: `attach(deliver)` gets every message,
    in order (those read before it was attached first); `closed` is set once the connection has ended. A call,
    not a stream the consumer's task reads: that was a task hop and two checkpoints per answer, measured as
    a sixth of a live call's CPU in the gateway."""

    MAX_EARLY = 1000  # messages held before a consumer attaches (it attaches in its first step: a server
    # writing more than this before that is dropped from, not allowed to grow the gateway's memory)

    def __init__(self) -> None:
        self.closed = anyio.Event()
        self._deliver: Callable[[dict[str, Any]], None] | None = None
        self._early: list[dict[str, Any]] | None = []  # None once a consumer has attached (and maybe left)
        self.dropped = 0  # messages past MAX_EARLY before the consumer attached

    def attach(self, deliver: Callable[[dict[str, Any]], None] | None) -> None:
        """Deliver every message to `deliver` from now on (None: drop them, the consumer is gone)."""
        self._deliver = deliver
        early, self._early = self._early or [], None
        if deliver is not None:
            for message in early:
                self._hand(deliver, message)

    def put(self, message: dict[str, Any]) -> None:
        if self.closed.is_set():
            return
        deliver = self._deliver
        if deliver is not None:
            self._hand(deliver, message)
        elif self._early is not None:  # no consumer yet: held for it, up to a bound
            if len(self._early) < self.MAX_EARLY:
                self._early.append(message)
                return
            if not self.dropped:
                logger.warning(
                    "stdio upstream: %d messages before anyone reads them; dropping the rest", self.MAX_EARLY
                )
            self.dropped += 1

    def close(self) -> None:
        self.closed.set()

    @staticmethod
    def _hand(deliver: Callable[[dict[str, Any]], None], message: dict[str, Any]) -> None:
        try:
            deliver(message)
        except Exception:  # noqa: BLE001 - a consumer's bug must not end the server's connection
            logger.exception("stdio upstream: a message could not be handled")


class Pipe:
    """The server's stdin, one JSON-RPC message a line. `write` puts a message in the pipe's buffer and says
    whether the writer may go on (True) or must `drain` first (False: the server is not reading as fast).
    A write that need not wait costs no checkpoint: anyio's stream wrapper added two per message."""

    __slots__ = ("_stdin", "_transport", "_high")

    def __init__(self, stdin: asyncio.StreamWriter) -> None:
        self._stdin = stdin
        self._transport = stdin.transport  # written to directly: all the stream's `write` does, less a property
        self._high = self._transport.get_write_buffer_limits()[1]

    def write(self, message: dict[str, Any]) -> bool:
        transport = self._transport
        if transport.is_closing():
            raise BrokenPipeError("the server's stdin is closed")
        try:
            transport.write(compact(message).encode() + b"\n")
        except RuntimeError as exc:  # uvloop's word for a write to a closed pipe
            raise BrokenPipeError(str(exc)) from None
        return transport.get_write_buffer_size() <= self._high

    async def drain(self) -> None:
        try:
            await self._stdin.drain()
        except RuntimeError as exc:
            raise BrokenPipeError(str(exc)) from None

    async def send(self, message: dict[str, Any]) -> None:
        if not self.write(message):
            await self.drain()


@asynccontextmanager
async def stdio_process(
    command: list[str],
    env: dict[str, str],
    cwd: str | None,
    max_message_bytes: int,
    on_exit: Callable[[ProcessInfo], None] | None = None,
) -> AsyncIterator[tuple[Inbox, Pipe, ProcessInfo]]:
    """Yields (the server's messages, plain JSON-RPC dicts; its stdin; process info). The process and its
    pipes are asyncio's own: the gateway runs on asyncio (uvloop)."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    LIVE_GROUPS.add(process.pid)
    info = ProcessInfo(pid=process.pid)
    inbox = Inbox()
    stdin = process.stdin
    assert stdin is not None and process.stdout is not None and process.stderr is not None

    async def pump_stdout() -> None:
        assert process.stdout is not None
        async for line in _lines(process.stdout, max_message_bytes):
            if isinstance(line, _TooLarge):
                error = _too_large_error(*line.args, limit=max_message_bytes)
                if error is None:
                    info.garbage_lines += 1
                    continue
                inbox.put(error)
                continue
            line = line.strip()
            if not line:
                continue
            try:
                message = _parse_raw(line)
            except ValueError:
                info.garbage_lines += 1
                snippet = line[:120].decode("utf-8", "replace")
                info.stderr_tail.append(f"[stdout, not JSON-RPC] {snippet}")
                continue
            inbox.put(message)
        info.returncode = process.returncode
        inbox.close()

    async def pump_stderr() -> None:
        assert process.stderr is not None
        async for raw in _lines(process.stderr, 4096):
            if not isinstance(raw, _TooLarge):
                info.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    async def watch_exit() -> None:
        # EOF alone is not enough: a launcher (npx, uvx) can die while a child
        # it spawned still holds stdout open. Its exit ends the connection too.
        while process.returncode is None:
            await anyio.sleep(0.1)
        await anyio.sleep(0.3)  # let the last lines it wrote arrive
        _killpg(process.pid, signal.SIGKILL)
        info.returncode = process.returncode
        inbox.close()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_stdout)
            tg.start_soon(pump_stderr)
            tg.start_soon(watch_exit)
            try:
                yield inbox, Pipe(stdin), info
            finally:
                with anyio.CancelScope(shield=True):
                    await stop_process(process)
                    info.returncode = process.returncode
                tg.cancel_scope.cancel()
    finally:
        LIVE_GROUPS.discard(process.pid)
        if on_exit is not None:
            on_exit(info)


# Process groups of the servers running now: what a forced exit kills on its way out.
LIVE_GROUPS: set[int] = set()


def kill_all_now() -> None:
    """SIGKILL every server's process group at once (a forced exit must not leave orphans)."""
    for pgid in list(LIVE_GROUPS):
        _killpg(pgid, signal.SIGKILL)


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """Close stdin, bounded wait, SIGTERM the group, bounded wait, SIGKILL the group."""
    if process.stdin is not None:
        with suppress(Exception):
            process.stdin.close()
    if await _wait_exit(process, CLOSE_GRACE):
        _killpg(process.pid, signal.SIGKILL)  # reap stragglers the server left in its group
        return
    _killpg(process.pid, signal.SIGTERM)
    if not await _wait_exit(process, TERM_GRACE):
        _killpg(process.pid, signal.SIGKILL)
        await _wait_exit(process, TERM_GRACE)


def _killpg(pid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _wait_exit(process: asyncio.subprocess.Process, seconds: float) -> bool:
    # Poll returncode, not wait(): a child holding the pipes makes wait() hang.
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.02)
        return True
    return False


async def _lines(stream: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | _TooLarge]:
    """Yield newline-delimited lines; a line over `limit` yields `_TooLarge(head, tail, size)` instead,
    keeping only its first and last bytes (where a JSON-RPC id can be found)."""
    buffer = bytearray()
    dropping = False
    head = b""
    tail = b""
    dropped = 0
    while True:
        try:
            chunk = await stream.read(65536)
        except OSError:
            break
        if not chunk:
            break
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if dropping:
                dropped += len(piece)
                tail = (tail + piece)[-256:]
            else:
                buffer += piece
                if len(buffer) > limit:
                    dropping, head, tail, dropped = True, bytes(buffer[:256]), bytes(buffer[-256:]), len(buffer)
                    buffer.clear()
            if newline < 0:
                break
            if dropping:
                yield _TooLarge(head, tail, dropped)
                dropping = False
            else:
                yield bytes(buffer)
                buffer.clear()
            start = newline + 1


def _too_large_error(head: bytes, tail: bytes, size: int, *, limit: int) -> dict[str, Any] | None:
    """An error response standing in for an oversized one, if its id can be found."""
    match = _TAIL_ID_RE.search(tail) or _HEAD_ID_RE.search(head)
    if match is None or b'"method"' in head[:64]:
        return None
    raw_id = match.group(1).decode()
    request_id: int | str = int(raw_id) if raw_id[0] != '"' else raw_id[1:-1]
    message = (
        f"response of {size} bytes exceeds the gateway's limit of {limit} bytes (mcpgw serve "
        "--max-response-bytes N raises it)"
    )
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": RESPONSE_TOO_LARGE, "message": message}}


def _parse_raw(line: bytes) -> dict[str, Any]:
    """A JSON-RPC message as a dict; ValueError for anything else (reported as garbage, like the SDK's parse)."""
    message = json.loads(line)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not ("method" in message or "id" in message):
        raise ValueError("not a JSON-RPC 2.0 message")
    return message
