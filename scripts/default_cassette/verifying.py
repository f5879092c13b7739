"""Verifying: a copy of the cassette replayed with nothing startable on PATH, every answer compared, in both eras."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
from default_session import Step

from .cassette_files import sha256
from .comparing import compare
from .gateway_process import require_ready, start_gateway, stop_gateway, wait_settled
from .playing import play
from .settings import CASSETTE, PYTHON


def verify(
    work: Path,
    steps: list[Step],
    recorded: list[dict[str, Any]],
    live_status: dict[str, Any],
    newcomer: tuple[list[Step], list[dict[str, Any]]],
) -> list[str]:
    """Replay a copy of the cassette with nothing startable on PATH; compare every answer."""
    copy_dir = work / "replay" / "cassettes"
    (copy_dir / "default").mkdir(parents=True)
    shutil.copy2(CASSETTE / "data.mdb", copy_dir / "default" / "data.mdb")
    digest = sha256(CASSETTE / "data.mdb")
    env = {**os.environ, "PATH": "/nonexistent"}
    gateway = start_gateway(
        [
            str(PYTHON),
            "-m",
            "mcpgw.cli",
            "serve",
            "--mode",
            "replay",
            "--cassette",
            "default",
            "--cassettes-dir",
            str(copy_dir),
        ],
        env=env,
        log_path=work / "replay.log",
        cwd=work / "replay",
    )
    problems: list[str] = []
    try:
        status = wait_settled(gateway, timeout=60)
        require_ready(status)
        started = [n for n, s in status["servers"].items() if s["pid"] is not None]
        if started:
            problems.append(f"replay started processes for {started}")
        if status["mode"] != "replay":
            problems.append(f"replay gateway reports mode {status['mode']!r}")
        if sorted(status["servers"]) != sorted(live_status["servers"]) or status["tools"] != live_status["tools"]:
            problems.append(
                f"replay serves {len(status['servers'])} servers / {status['tools']} tools, "
                f"recording had {len(live_status['servers'])} / {live_status['tools']}"
            )
        replayed = anyio.run(play, gateway.url("verify-legacy"), steps, "legacy")
        problems += compare(recorded, replayed, "legacy")
        modern = anyio.run(play, gateway.url("verify-2026"), steps, "2026-07-28")
        problems += compare(recorded, modern, "2026-07-28")
        reads, recorded_reads = newcomer
        order = list(range(len(reads)))[::-1]  # a newcomer's reads in another order: still answered, same answers
        shuffled = anyio.run(play, gateway.url("verify-reads"), [reads[i] for i in order], "2026-07-28")
        problems += compare([recorded_reads[i] for i in order], shuffled, "2026-07-28")
        misses = [o["step"] for o in replayed + modern + shuffled if "replay" in json.dumps(o.get("error", ""))]
        if misses:
            problems.append(f"replay misses: {misses[:10]}")
    finally:
        stop_gateway(gateway)
    if sha256(copy_dir / "default" / "data.mdb") != digest:
        problems.append("replaying changed data.mdb")
    left = sorted(str(p.relative_to(copy_dir)) for p in copy_dir.rglob("*") if p.is_file())
    print(f"files in the replay's cassettes dir afterwards: {', '.join(left)}")
    return problems
