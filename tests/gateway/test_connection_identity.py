"""Issue 41 item 3: two clients that use one source port one after the other are two clients.

An untagged client without cookies was known by its source address and port for 600 s; a harness that reused
a port (busy ones do, within minutes) got the first client's lane, keyed on its history. On a real gateway, two
connections bound to the same source port, one after the other, are told two identities (the cookie each is
offered names the lane its calls go to); two requests on one connection keep one.
"""

from __future__ import annotations

import re
import socket
import struct

from tests.conftest import free_port, misbehaving_entry

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("good")
BODY = b'{"page": 1, "limit": 5}'


def _identities(base: str, source_port: int, requests: int) -> list[str]:
    """The identity offered to each of `requests` untagged requests on one connection from `source_port`."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Closed with a reset, not a FIN: our side keeps no TIME_WAIT, so the next client can bind the same port at once.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.bind(("127.0.0.1", source_port))
    sock.connect((host, int(port)))
    sock.settimeout(30)
    said: list[str] = []
    with sock:
        for n in range(requests):
            close = b"Connection: close\r\n" if n == requests - 1 else b""  # the gateway closes: its side waits
            sock.sendall(
                b"POST /v1/list-servers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + close
                + b"Content-Length: %d\r\n\r\n" % len(BODY)
                + BODY
            )
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                answer += sock.recv(65536)
            said.append(re.search(rb"mcpgw-client=([0-9a-f]+)", answer).group(1).decode())
    return said


def test_two_clients_from_one_source_port_get_two_identities(gateway_factory):
    gateway = gateway_factory(CONFIG)
    port = free_port()
    first = _identities(gateway.base, port, 2)
    second = _identities(gateway.base, port, 1)
    assert first[0] == first[1]  # one connection, one client
    assert second[0] != first[0]  # the same address and port, another connection: another client
