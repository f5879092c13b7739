"""The gateway process: `mcpgw serve` on a free loopback port, waited for until its servers settle, stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .settings import Failure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Gateway:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, run: str) -> str:
        return f"{self.base}/mcp?run={run}"

    def status(self) -> dict[str, Any]:
        return httpx.get(self.base + "/status", timeout=5).json()

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def start_gateway(args: list[str], *, env: dict[str, str], log_path: Path, cwd: Path) -> Gateway:
    port = free_port()
    log = open(log_path, "w")
    process = subprocess.Popen(
        [*args, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True
    )
    log.close()
    return Gateway(process, port, log_path)


def wait_settled(gateway: Gateway, timeout: float) -> dict[str, Any]:
    """Poll /status until no server is starting or restarting; bounded."""
    deadline = time.monotonic() + timeout
    status: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        if gateway.process.poll() is not None:
            raise Failure(f"gateway exited with code {gateway.process.returncode}:\n{gateway.log_tail()}")
        try:
            status = gateway.status()
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        if status["servers"] and all(s["state"] not in ("starting", "restarting") for s in status["servers"].values()):
            return status
        time.sleep(0.3)
    waiting = sorted(
        n for n, s in (status or {"servers": {}})["servers"].items() if s["state"] in ("starting", "restarting")
    )
    raise Failure(
        f"servers still starting after {timeout:.0f}s: {', '.join(waiting) or '(no /status answer)'}\n{gateway.log_tail()}"
    )


def require_ready(status: dict[str, Any]) -> None:
    bad = {name: s for name, s in sorted(status["servers"].items()) if s["state"] != "ready"}
    if bad:
        lines = [f"  {name}: {s['state']} ({s.get('reason') or 'no reason given'})" for name, s in bad.items()]
        raise Failure(f"{len(bad)} of {len(status['servers'])} server(s) not ready:\n" + "\n".join(lines))


def stop_gateway(gateway: Gateway, timeout: float = 30) -> None:
    """SIGTERM and wait; a gateway that does not stop in time is killed, and that is a failure."""
    if gateway.process.poll() is not None:
        return
    gateway.process.send_signal(signal.SIGTERM)
    try:
        gateway.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(gateway.process.pid, signal.SIGKILL)
        gateway.process.wait(timeout=10)
        raise Failure(
            f"gateway did not stop within {timeout:.0f}s of SIGTERM; killed it\n{gateway.log_tail()}"
        ) from None
