"""The gateways the fuzzer plays against: their config text, starting `mcpgw serve` and stopping it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent.parent  # scripts/
# the project checkout the gateways run from (their cwd): a scratch copy, never the developers' work tree
CODE = Path(os.environ.get("DIFZ_CODE", str(HERE.parent)))  # the checkout the gateways run from (their cwd)
PY = os.environ.get("DIFZ_PYTHON", sys.executable)
SERVING = re.compile(r"mcpgw: serving MCP at \S+ .*\(status: (http://\S+)/status\)")
FS_INDEX = next(
    Path.home().glob(".npm/_npx/*/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), None
)
EV_INDEX = next(
    Path.home().glob(".npm/_npx/*/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), None
)


def config_text(root: str, isolated: bool, everything: bool = False) -> str:
    fs_cmd = (
        ("command: node\n    args: [%s, %s]" % (json.dumps(str(FS_INDEX)), json.dumps(root)))
        if FS_INDEX
        else (
            'command: npx\n    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", %s]' % json.dumps(root)
        )
    )
    text = "version: 1\nservers:\n  filesystem:\n    %s\n    isolation: %s\n" % (
        fs_cmd,
        "run" if isolated else "shared",
    )
    if everything:
        ev_cmd = (
            ('command: node\n    args: [%s, "stdio"]' % json.dumps(str(EV_INDEX)))
            if EV_INDEX
            else ('command: npx\n    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]')
        )
        text += "  everything:\n    %s\n    isolation: %s\n" % (ev_cmd, "run" if isolated else "shared")
    return text


@dataclass
class Gateway:
    process: subprocess.Popen
    base: str
    log_path: Path

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)


def start_gateway(
    workdir: Path, config: str, mode: str, cassette: str, cassettes_dir: Path, *extra: str, settle: float = 120
) -> Gateway:
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / f"config-{mode}-{cassette}.yaml"
    cfg.write_text(config)
    log_path = workdir / f"gateway-{mode}-{cassette}.log"
    log = open(log_path, "w")
    port = 0
    if "--workers" in extra:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    process = subprocess.Popen(
        [
            PY,
            "-m",
            "mcpgw",
            "serve",
            "--config",
            str(cfg),
            "--port",
            str(port),
            "--cassettes-dir",
            str(cassettes_dir),
            "--cassette",
            cassette,
            "--mode",
            mode,
            "--naming",
            "prefix",
            *extra,
        ],  # /mcp lanes call filesystem__<tool>
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=str(CODE),
        start_new_session=True,
    )
    gw = Gateway(process, f"http://127.0.0.1:{port}" if port else "", log_path)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gateway exited: {gw.log()[-3000:]}")
        if not gw.base:
            m = SERVING.search(gw.log())
            if m:
                gw.base = m.group(1)
        if gw.base:
            try:
                r = httpx.get(gw.base + "/readyz", timeout=2)
                if r.status_code == 200:
                    return gw
            except httpx.HTTPError:
                pass
        time.sleep(0.05)
    gw.stop()
    raise RuntimeError(f"gateway did not settle: {gw.log()[-3000:]}")
