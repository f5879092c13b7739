"""An answer leaves in one TCP segment, not two.

uvicorn writes a response's head to the socket when the app sends
`http.response.start`, and its body when the app sends `http.response.body`:
two sends, so two segments on the wire, and the client wakes up twice (once for
the head, once for the body) for every JSON answer. On loopback that is a
second send and a second wake-up on both sides of each call; sampled under load,
the head's own send was a fifth of the gateway's time on a replayed call.

`CoalescingTransport` sits between the HTTP protocol and its socket transport:
writes made during one event-loop step are joined and handed to the socket at
the end of that step (one `call_soon`), so a head and a body sent back to back
go out together. Nothing waits longer than the current step; closing flushes
first; an abort drops what is pending, as the socket transport drops its own
buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingTransport:
    __slots__ = ("_transport", "_loop", "_pending", "is_closing")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None  # writes of this step, flushed at its end
        # The socket transport's own: asked a few times per hot answer, so bound here rather than through a method
        # of ours (a Python call each time) or __getattr__.
        self.is_closing = transport.is_closing

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        chunk = data if isinstance(data, bytes) else bytes(data)  # the caller may reuse its buffer
        if self._pending is None:
            self._pending = [chunk]
            self._loop.call_soon(self._flush)
        else:
            self._pending.append(chunk)

    def write_whole(self, data: bytes) -> None:
        """A whole answer in one piece (the hot lane's): nothing to join it with, so it leaves now, after
        anything pending."""
        if self._pending is not None:
            self.write(data)
            self._flush()
        elif not self._transport.is_closing():
            self._transport.write(data)

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending or ()))

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # everything else is the socket transport's
        return getattr(self._transport, name)


class CoalescedWritesProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, writing through a `CoalescingTransport`."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]  # duck-types asyncio.Transport
