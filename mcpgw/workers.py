"""`mcpgw serve --workers N`: N gateway processes behind one port, for replay.

The parent listens on the port and starts N workers (`mcpgw serve ... --worker K/N`);
it deals the connections it accepts to the workers in turn (`gateway.http.connection_handoff`).
Each worker opens the cassette read-only, listens on a private Unix socket, and serves
the lanes it owns (`gateway.http.worker_routing`): a request that reaches another worker is
forwarded there, so every lane's replay state lives in one process and the answers are
those of a single process. All workers append to one call-log cassette (appends are
numbered inside the write transaction, so processes never overwrite each other).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.http.connection_handoff import ConnectionDealer, channel_pair
from mcpgw.gateway.http.worker_routing import Workers


def run_parent(argv: list[str], count: int, log_cassette: str, host: str, port: int) -> int:
    """Listen on host:port, start `count` workers with `argv` (the serve command without --workers),
    deal them the connections, and wait for them."""
    listener = listen(host, port)
    socket_dir = Path(tempfile.mkdtemp(prefix="mcpgw-workers-"))
    base = [sys.executable, "-m", "mcpgw.cli", *argv, "--log-cassette", log_cassette, "--worker-dir", str(socket_dir)]
    channels = [channel_pair() for _ in range(count)]
    children = [
        subprocess.Popen(
            [*base, "--worker", f"{k}/{count}", "--worker-channel", str(theirs.fileno())], pass_fds=[theirs.fileno()]
        )
        for k, (_, theirs) in enumerate(channels)
    ]
    for _, theirs in channels:
        theirs.close()
    dealer = ConnectionDealer(listener, [ours for ours, _ in channels])
    dealer.start()
    stopping = False

    def forward(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:  # until every worker is gone; one failing takes the others down
            codes = [child.poll() for child in children]
            if all(code is not None for code in codes):
                stopped = (0, -signal.SIGTERM, -signal.SIGINT) if stopping else (0,)
                failed = [code for code in codes if code not in stopped]
                return 0 if not failed else (failed[0] if failed[0] > 0 else 1)
            if not stopping and any(code is not None for code in codes):
                forward(signal.SIGTERM, None)
            time.sleep(0.1)
    finally:
        dealer.stop()
        for ours, _ in channels:
            ours.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for child in children:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
        shutil.rmtree(socket_dir, ignore_errors=True)


def parse_worker(value: str, socket_dir: str | None) -> Workers:
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)) or not socket_dir:
        raise GatewayError(f"--worker {value!r}: expected K/N with 0 <= K < N, and --worker-dir")
    return Workers(int(index), int(count), Path(socket_dir))


def listen(host: str, port: int) -> socket.socket:
    """The gateway's port, listened on by the parent (which deals its connections)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise GatewayError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    listener.listen(2048)
    return listener


def worker_sockets(workers: Workers) -> list[socket.socket]:
    """This worker's own Unix socket (requests other workers forward to it)."""
    path = workers.socket_path(workers.index)
    if path.exists():
        os.unlink(path)
    private = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    private.bind(str(path))
    private.listen(2048)
    return [private]


def worker_channel(fd: str | None) -> socket.socket:
    """The worker's end of its channel from the parent (`--worker-channel FD`)."""
    if not fd or not fd.isdigit():
        raise GatewayError(f"--worker-channel {fd!r}: expected the descriptor the --workers parent passed")
    return socket.socket(fileno=int(fd))
