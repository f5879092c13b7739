"""Connections that stall are closed: a deadline for each request's headers.

uvicorn closes a keep-alive connection that stays idle after an answer, but a
connection that never sends a whole request head (nothing at all, or a header
line every minute) is kept forever; a few hundred of them hold sockets and
memory. This protocol arms a timer when the connection opens, and when a read
ends inside a request's head (a head that arrives whole in one read, as almost
every one does, never arms it); it disarms it once the headers are complete; a
connection whose headers do not arrive in time is closed. (Bodies have their own deadline,
in `http_guard`; uvicorn's keep-alive timeout covers idle time between
requests; the graceful-shutdown timeout bounds what a client that never reads
can hold up at exit.)
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpgw.gateway.http.head_hook import HeadHook

HEADER_TIMEOUT = 10.0  # seconds from connection (or from a request's first byte) to its last header


class HeaderDeadlineProtocol(HeadHook):
    header_timeout = HEADER_TIMEOUT
    _header_timer: asyncio.TimerHandle | None = None
    _head_pending = False  # a request's head has begun and is not complete

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if (
            self._head_pending
        ):  # the read ended inside a head: its deadline runs from here (within one read of its start)
            self._arm_header_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_pending = True

    def on_headers_complete(self) -> None:
        self._head_pending = False
        self._disarm_header_timer()
        super().on_headers_complete()

    def head_complete(self) -> None:
        self._head_pending = False
        self._disarm_header_timer()
        super().head_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()
