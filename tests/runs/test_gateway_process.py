"""A gateway started for a Ray node (`die_with_parent`) from a process that blocks SIGINT, as a
Ray worker does, still stops on `stop()`'s SIGINT (an exit, not the SIGKILL 20 s later), and
exits when the process that started it is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap

from mcpgw.runs.gateway_process import GatewayProcess
from tests.conftest import ROOT


def _cassettes(tmp_path):
    """A copy of the embedded cassette: the gateway's replay log goes beside it, not into the repository."""
    cassettes = tmp_path / "cassettes"
    (cassettes / "default").mkdir(parents=True)
    shutil.copy2(ROOT / "cassettes" / "default" / "data.mdb", cassettes / "default" / "data.mdb")
    return cassettes


def test_stops_on_sigint_when_started_with_sigint_blocked(tmp_path):
    cassettes = _cassettes(tmp_path)
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        gateway = GatewayProcess(["--cassettes-dir", str(cassettes)], tmp_path / "g.log", die_with_parent=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    gateway.stop()
    assert gateway.process.returncode != -signal.SIGKILL, (tmp_path / "g.log").read_text()


def test_exits_with_the_process_that_started_it(tmp_path):
    cassettes = _cassettes(tmp_path)
    starter = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from mcpgw.runs.gateway_process import GatewayProcess
        g = GatewayProcess(["--cassettes-dir", {str(cassettes)!r}], Path({str(tmp_path / "g.log")!r}), die_with_parent=True)
        print(g.process.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        pid = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait(10)
    # The gateway is not our child: wait for its /proc entry to go (SIGTERM, then its own shutdown).
    import time

    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        if open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.1)  # polling another process's exit; bounded by the deadline
    alive = os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the gateway outlived the process that started it"
