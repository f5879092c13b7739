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
import mcp_types as types
from anyio.abc import Process
from mcp.shared.message import SessionMessage

from gateway.errors import RESPONSE_TOO_LARGE

from gateway.secrets import scrub

logger = logging.getLogger(__name__)

CLOSE_GRACE = 2.0
TERM_GRACE = 2.0
_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
# Only a top-level id counts: last member (`..."id":7}`, as TypeScript servers write it), or
# among the first members (`{"jsonrpc":"2.0","id":7,...`, as Python servers do). A nested
# "id" inside the result must never be taken for it.
_TAIL_ID_RE = re.compile(rb',\s*' + _ID + rb'\s*\}\s*$')
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


@asynccontextmanager
async def stdio_process(
    command: list[str],
    env: dict[str, str],
    cwd: str | None,
    max_message_bytes: int,
    on_exit: Callable[[ProcessInfo], None] | None = None,
    raw: bool = False,
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream, Any, ProcessInfo]]:
    """Yields (messages from the server, the way to write to it, process info).

    By default messages are the SDK's `SessionMessage`s both ways (a memory stream to write to).
    With `raw`, they are plain JSON-RPC dicts, and the writer is `async send(message: dict)`
    writing straight to the server's stdin (for `gateway.stdio_rpc`: no models, no extra task hop)."""
    process = await anyio.open_process(command, env=env, cwd=cwd, start_new_session=True)
    LIVE_GROUPS.add(process.pid)
    info = ProcessInfo(pid=process.pid)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](64)

    async def pump_stdout() -> None:
        assert process.stdout is not None
        async with read_send:
            async for line in _lines(process.stdout, max_message_bytes):
                if isinstance(line, _TooLarge):
                    error = _too_large_error(*line.args, limit=max_message_bytes)
                    if error is None:
                        info.garbage_lines += 1
                        continue
                    item = error if raw else SessionMessage(types.jsonrpc_message_adapter.validate_python(error))
                else:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        item = _parse_raw(line) if raw else SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                    except ValueError:
                        info.garbage_lines += 1
                        snippet = line[:120].decode("utf-8", "replace")
                        info.stderr_tail.append(f"[stdout, not JSON-RPC] {snippet}")
                        continue
                try:
                    await read_send.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
        info.returncode = process.returncode

    async def pump_stderr() -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for raw in _lines(process.stderr, 4096):
                if not isinstance(raw, _TooLarge):
                    info.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    async def pump_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    async def watch_exit() -> None:
        # EOF alone is not enough: a launcher (npx, uvx) can die while a child
        # it spawned still holds stdout open. Its exit ends the connection too.
        while process.returncode is None:
            await anyio.sleep(0.1)
        await anyio.sleep(0.3)  # let the last lines it wrote arrive
        _killpg(process.pid, signal.SIGKILL)
        info.returncode = process.returncode
        await read_send.aclose()

    async def send_raw(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        await process.stdin.send(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_stdout)
            tg.start_soon(pump_stderr)
            if not raw:
                tg.start_soon(pump_stdin)
            tg.start_soon(watch_exit)
            try:
                yield read_recv, send_raw if raw else write_send, info
            finally:
                with anyio.CancelScope(shield=True):
                    await write_send.aclose()
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


async def stop_process(process: Process) -> None:
    """Close stdin, bounded wait, SIGTERM the group, bounded wait, SIGKILL the group."""
    if process.stdin is not None:
        with suppress(Exception):
            await process.stdin.aclose()
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


async def _wait_exit(process: Process, seconds: float) -> bool:
    # Poll returncode, not wait(): a child holding the pipes makes wait() hang.
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.02)
        return True
    return False


async def _lines(stream: anyio.abc.ByteReceiveStream, limit: int) -> AsyncIterator[bytes | _TooLarge]:
    """Yield newline-delimited lines; a line over `limit` yields `_TooLarge(head, tail, size)` instead,
    keeping only its first and last bytes (where a JSON-RPC id can be found)."""
    buffer = bytearray()
    dropping = False
    head = b""
    tail = b""
    dropped = 0
    while True:
        try:
            chunk = await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
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
    message = (f"response of {size} bytes exceeds the gateway's limit of {limit} bytes (mcpgw serve "
               "--max-response-bytes N raises it)")
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": RESPONSE_TOO_LARGE, "message": message}}


def _parse_raw(line: bytes) -> dict[str, Any]:
    """A JSON-RPC message as a dict; ValueError for anything else (reported as garbage, like the SDK's parse)."""
    message = json.loads(line)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not ("method" in message or "id" in message):
        raise ValueError("not a JSON-RPC 2.0 message")
    return message
