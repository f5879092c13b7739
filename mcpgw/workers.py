"""`mcpgw serve --workers N`: N gateway processes behind one port, for replay.

The parent starts N workers (`mcpgw serve ... --worker K/N`) and waits; each worker
opens the cassette read-only, binds the shared port with SO_REUSEPORT (the kernel
spreads connections) and a private Unix socket, and serves the lanes it owns
(`gateway.worker_routing`): a request that reaches another worker is forwarded
there, so every lane's replay state lives in one process and the answers are those
of a single process. All workers append to one call-log cassette (appends are
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

from gateway.errors import GatewayError
from gateway.worker_routing import Workers


def run_parent(argv: list[str], count: int, log_cassette: str) -> int:
    """Start `count` workers with `argv` (the serve command without --workers) and wait for them."""
    socket_dir = Path(tempfile.mkdtemp(prefix="mcpgw-workers-"))
    base = [sys.executable, "-m", "mcpgw.cli", *argv, "--log-cassette", log_cassette, "--worker-dir", str(socket_dir)]
    children = [subprocess.Popen([*base, "--worker", f"{k}/{count}"]) for k in range(count)]
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


def worker_sockets(workers: Workers, host: str, port: int) -> list[socket.socket]:
    """The shared port (SO_REUSEPORT: every worker binds it) and this worker's own Unix socket."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    shared = socket.socket(family, socket.SOCK_STREAM)
    shared.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    shared.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        shared.bind((host, port))
    except OSError as exc:
        shared.close()
        raise GatewayError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    shared.listen(2048)
    path = workers.socket_path(workers.index)
    if path.exists():
        os.unlink(path)
    private = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    private.bind(str(path))
    private.listen(2048)
    return [shared, private]
