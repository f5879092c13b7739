"""Issue 25 item 6: a gateway's memory under a header flood (4 connections x N x 1 KB header lines to /healthz).

Starts `mcpgw serve` with no servers on a free loopback port, floods it, prints the gateway's RSS before and
after and what each connection got back. Loopback only; bounded by N and a 60 s socket timeout.
Usage: python bench/bench_header_flood.py [lines-per-connection]
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def flood(port: int, lines: int, results: list[str]) -> None:
    line = b"X-Flood: " + b"a" * 1000 + b"\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
            try:
                for _ in range(lines):
                    sock.sendall(line)
                sock.sendall(b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            answer = sock.recv(200)
            results.append(answer.split(b"\r\n")[0].decode() or "closed")
    except OSError as exc:
        results.append(f"closed ({type(exc).__name__})")


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "servers.yaml"
        # one upstream that never needs to start: the flood is about the HTTP edge, not the servers
        config.write_text(
            "version: 1\nservers:\n  idle:\n    command: "
            + sys.executable
            + "\n    args: ['-c', 'import time; time.sleep(600)']\n"
        )
        gateway = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcpgw.cli",
                "serve",
                "--config",
                str(config),
                "--port",
                str(port),
                "--cassettes-dir",
                str(Path(tmp) / "c"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            before = rss_mb(gateway.pid)
            results: list[str] = []
            started = time.monotonic()
            threads = [threading.Thread(target=flood, args=(port, lines, results)) for _ in range(4)]
            for t in threads:
                t.start()
            peak = before
            while any(t.is_alive() for t in threads):
                peak = max(peak, rss_mb(gateway.pid))
                time.sleep(0.05)
            print(
                f"{lines} x 1 KB header lines on 4 connections: answers {results} in {time.monotonic() - started:.1f} s"
            )
            print(f"gateway RSS: before {before:.0f} MB, peak {peak:.0f} MB, after {rss_mb(gateway.pid):.0f} MB")
        finally:
            gateway.terminate()
            gateway.wait(timeout=30)


if __name__ == "__main__":
    main()
