"""The --workers parent deals accepted connections to the workers (real sockets, one process).

End to end (the gateway's workers each holding half of eight clients) is in
tests/mcpgw/test_workers.py.
"""

from __future__ import annotations

import asyncio
import socket
import time

from mcpgw.gateway.http.connection_handoff import ConnectionDealer, channel_pair, receive_connections


def listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def received(channel: socket.socket) -> list[socket.socket]:
    out = []
    channel.setblocking(False)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 16)
        except BlockingIOError:
            return out
        out += [socket.socket(fileno=fd) for fd in fds]


def test_connections_go_round_and_a_full_channel_passes_its_turn():
    server = listener()
    pairs = [channel_pair() for _ in range(2)]
    # A channel's room is its send buffer (a few hundred connections by default): make worker 0's small.
    pairs[0][0].setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1)
    dealer = ConnectionDealer(server, [ours for ours, _ in pairs])
    dealer.start()
    clients = []
    try:
        for _ in range(4):
            clients.append(socket.create_connection(server.getsockname()))
        deadline = time.monotonic() + 10
        while sum(dealer.dealt) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dealer.dealt == [2, 2]
        # Worker 0 stops reading: once its channel is full, its turns go to worker 1, and nothing is lost.
        taken_by_1 = received(pairs[1][1])
        for _ in range(40):
            clients.append(socket.create_connection(server.getsockname()))
            taken_by_1 += received(pairs[1][1])
        while sum(dealer.dealt) < 44 and time.monotonic() < deadline + 10:
            taken_by_1 += received(pairs[1][1])
            time.sleep(0.01)
        assert sum(dealer.dealt) == 44 and dealer.dealt[1] > 22
        taken_by_1 += received(pairs[1][1])
        assert len(taken_by_1) == dealer.dealt[1]
        for sock in taken_by_1:
            sock.close()
    finally:
        dealer.stop()
        for client in clients:
            client.close()


def test_a_dealt_connection_is_the_clients_own_socket():
    async def scenario() -> bytes:
        server = listener()
        ours, theirs = channel_pair()
        dealer = ConnectionDealer(server, [ours])
        dealer.start()
        got: asyncio.Queue[socket.socket] = asyncio.Queue()
        stop = receive_connections(theirs, got.put_nowait)
        try:
            reader, writer = await asyncio.open_connection(*server.getsockname())
            connection = await asyncio.wait_for(got.get(), 10)
            writer.write(b"hello")
            await writer.drain()
            loop = asyncio.get_running_loop()
            data = await asyncio.wait_for(loop.sock_recv(connection, 16), 10)
            await loop.sock_sendall(connection, b"back")
            assert await asyncio.wait_for(reader.readexactly(4), 10) == b"back"
            connection.close()
            writer.close()
            return data
        finally:
            stop()
            dealer.stop()

    assert asyncio.run(scenario()) == b"hello"
