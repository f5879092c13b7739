"""A gateway for `mcpgw run` to drive: started as `mcpgw serve` with the run's
options on a free loopback port, waited for, and stopped (SIGINT, bounded)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from mcpgw.gateway.errors.tree import GatewayError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_free(port: int) -> None:
    """A port the user chose must be free before the gateway starts: were another gateway listening there,
    its /status would answer the readiness wait and the run would go to it instead."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise GatewayError(f"--port {port}: cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None


# Linux: the gateway gets SIGTERM when the process that started it dies (prctl PR_SET_PDEATHSIG,
# kept across exec), so a Ray node killed under its actor leaves no orphan gateway behind. SIGINT
# and SIGTERM are set back to their defaults first: a Ray worker blocks them, and a blocked or ignored
# signal stays so across exec (the gateway sat out `stop()`'s SIGINT until the SIGKILL, 20 s later).
DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGTERM); "
    "[signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)]; "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM)); "
    "os.getppid() == int(sys.argv[1]) or sys.exit(1); os.execv(sys.argv[2], sys.argv[2:])"
)


class GatewayProcess:
    def __init__(
        self,
        serve_args: list[str],
        log_path: Path,
        start_timeout: float = 240.0,
        env: dict[str, str] | None = None,
        port: int | None = None,
        die_with_parent: bool = False,
    ) -> None:
        if port:
            ensure_free(port)
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("w")
        command = [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *serve_args,
        ]
        if die_with_parent and sys.platform == "linux":
            command = [sys.executable, "-c", DIE_WITH_PARENT, str(os.getpid()), *command]
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
        try:
            self._wait_ready(start_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise GatewayError(f"the gateway exited at start: {self._tail()}")
                try:
                    status = client.get(self.base + "/status").json()
                except (httpx.HTTPError, ValueError):
                    status = None
                if status and all(s["state"] != "starting" for s in status["servers"].values()):
                    return
                time.sleep(0.05)  # polling a process we do not control; bounded by the deadline
        raise GatewayError(f"the gateway was not ready within {timeout:g}s: {self._tail()}")

    def _tail(self) -> str:
        self._log.flush()
        lines = [
            ln.removeprefix("mcpgw: ") for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()
        ]
        return " | ".join(lines[-3:]) or "(no output)"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log.close()
