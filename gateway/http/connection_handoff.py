"""Connections spread evenly over the workers: the parent accepts, each worker gets its turn.

With every worker binding the port (SO_REUSEPORT), the kernel picks a worker per connection
by a hash of its addresses, blind to how many each holds. An agent harness keeps a few
long-lived connections (8 clients: 8 connections for the whole run), so one worker often held
5 or 6 of the 8 and capped the throughput of all (measured: 2.6 to 1 splits of the CPU).

Here the `--workers` parent owns the listening socket. A thread accepts each connection and
passes its descriptor (SCM_RIGHTS) to the workers in turn, over one socketpair per worker; the worker hands it to its HTTP server as if it had accepted it itself. A descriptor
sent before the worker listens waits in the socketpair, so nothing is lost while workers start.
Which worker owns a lane does not change (`gateway.http.worker_routing` still forwards a request to
the worker that owns its session, run or client); this only decides who reads the connection.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

DEAL_PATIENCE = 30.0  # seconds a connection waits for a worker with room (workers starting up, all busy)


class ConnectionDealer:
    """The parent's side: accept on `listener`, deal each connection to the next worker's channel."""

    def __init__(self, listener: socket.socket, channels: list[socket.socket]) -> None:
        self.listener = listener
        self.channels = channels
        for channel in channels:
            channel.setblocking(False)
        self.dealt = [0] * len(channels)
        self._thread = threading.Thread(target=self._run, name="mcpgw-connection-dealer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting (a blocked accept is woken by the shutdown) and close the listener."""
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        turn = 0
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # the listener was closed: the gateway is stopping
            with connection:
                turn = self._deal(connection, turn)

    def _deal(self, connection: socket.socket, turn: int) -> int:
        """Give the connection to the next worker whose channel has room (a channel holds a few hundred
        connections a worker has not taken yet: it is still starting, or stuck); wait a little if none
        has. Returns the next turn."""
        deadline = time.monotonic() + DEAL_PATIENCE
        while time.monotonic() < deadline:
            for _ in self.channels:
                index = turn % len(self.channels)
                turn += 1
                try:
                    socket.send_fds(self.channels[index], [b"c"], [connection.fileno()])
                    self.dealt[index] += 1
                    return turn
                except BlockingIOError:
                    continue  # that worker's channel is full: the next one
                except OSError as exc:  # that worker is gone (the parent then stops them all)
                    logger.warning("worker %d cannot take connections: %s", index, exc)
            time.sleep(0.01)
        logger.warning("no worker took a connection within %.0f s: closed", DEAL_PATIENCE)
        return turn


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """(parent's end, worker's end) of one worker's channel: a message per connection, and an end of
    file when the parent is gone (however it died), so that its workers stop too."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def receive_connections(
    channel: socket.socket, take: Callable[[socket.socket], Any], parent_gone: Callable[[], Any] = lambda: None
) -> Callable[[], None]:
    """The worker's side: call `take(sock)` with each connection the parent deals, from the running loop,
    and `parent_gone()` at the channel's end. Returns a function that stops receiving."""
    loop = asyncio.get_running_loop()
    channel.setblocking(False)

    def on_readable() -> None:
        while True:
            try:
                message, fds, _, _ = socket.recv_fds(channel, 16, 64)
            except BlockingIOError:
                return
            except OSError:
                message, fds = b"", []
            for fd in fds:
                connection = socket.socket(fileno=fd)
                connection.setblocking(False)
                take(connection)
            if not message and not fds:  # end of file: the parent closed its end, or died
                stop()
                parent_gone()
                return

    def stop() -> None:
        if channel.fileno() != -1:
            loop.remove_reader(channel.fileno())
            channel.close()

    loop.add_reader(channel.fileno(), on_readable)
    return stop


def serve_dealt_connections(uv_server: Any, channel: socket.socket) -> Callable[[], None]:
    """Serve each connection dealt on `channel` with `uv_server`'s HTTP protocol, as its own listener would
    (call once the server has started). Returns a function that stops receiving."""
    config = uv_server.config
    loop = asyncio.get_running_loop()
    attaching: set[asyncio.Task[Any]] = set()

    def protocol() -> Any:
        return config.http_protocol_class(
            config=config, server_state=uv_server.server_state, app_state=uv_server.lifespan.state
        )

    async def attach(connection: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(protocol, connection)
        except OSError:  # the client left before we took it
            connection.close()

    def take(connection: socket.socket) -> None:
        if uv_server.should_exit:  # shutting down: no new connections
            connection.close()
            return
        task = loop.create_task(attach(connection))
        attaching.add(task)
        task.add_done_callback(attaching.discard)

    def parent_gone() -> None:
        if not uv_server.should_exit:
            logger.warning("the --workers parent is gone: this worker stops")
            uv_server.should_exit = True

    return receive_connections(channel, take, parent_gone)
