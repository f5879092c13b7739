"""Arize Phoenix as the tests' OTLP collector: `phoenix serve` from its own environment (scripts/phoenix_venv.py;
scripts/fetch-test-servers.sh makes it) on loopback ports, with a working folder of its own, started and
stopped by the test; spans read back through Phoenix's REST API (GET /v1/projects/<project>/spans)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, free_port


def phoenix_command() -> Path:
    venv = Path(
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "phoenix_venv.py")], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    if not (venv / "bin" / "phoenix").exists():
        pytest.skip(f"no Arize Phoenix at {venv}: run scripts/fetch-test-servers.sh")
    return venv / "bin" / "python"  # its console script's first line names the folder it was built in


class Phoenix:
    def __init__(self, workdir: Path, start_timeout: float = 240.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "phoenix.log"
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(workdir),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                [str(phoenix_command()), "-m", "phoenix.server.main", "serve"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"phoenix exited: {self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"phoenix did not start in {start_timeout}s: {self.log_path.read_text()[-3000:]}")

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            answer = httpx.get(f"{self.url}/v1/projects/{project}/spans", params=params, timeout=30)
            if answer.status_code == 404:  # no span in that project yet
                return found
            answer.raise_for_status()
            body = answer.json()
            found += body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return found

    def wait_spans(self, count: int, project: str = "default", timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans(project)
            if len(spans) >= count or time.monotonic() > deadline:
                return spans
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
