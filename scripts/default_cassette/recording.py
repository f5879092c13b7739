"""Recording: the lock's servers behind a record gateway, the session played through it, the outcomes checked."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import default_session as session
from default_session import Step

from .gateway_process import require_ready, start_gateway, stop_gateway, wait_settled
from .outcome_table import check_environment_answer, print_table
from .planning import newcomer_reads, plan_session
from .playing import play
from .scratch_world import prepare_world
from .settings import CASSETTE, CASSETTES, CONFIG, PROFILE, PYTHON, ROOT, VENV_BIN, Failure


def record(work: Path) -> tuple[list[Step], list[dict[str, Any]], dict[str, Any]]:
    for command in ("npx", "uvx", "git"):
        if shutil.which(command) is None:
            raise Failure(f"{command} is not on PATH; recording starts the lock's servers with it")
    prepare_world()
    try:
        if CASSETTE.exists():
            shutil.rmtree(CASSETTE)
            print(f"deleted the old {CASSETTE.relative_to(ROOT)}")
        mcpgw = [str(VENV_BIN / "mcpgw")] if (VENV_BIN / "mcpgw").exists() else [str(PYTHON), "-m", "mcpgw.cli"]
        gateway = start_gateway(
            [
                *mcpgw,
                "serve",
                "--mode",
                "record",
                "--cassette",
                "default",
                "--config",
                str(CONFIG),
                "--profile",
                PROFILE,
                "--cassettes-dir",
                str(CASSETTES),
            ],
            env=dict(os.environ),
            log_path=work / "record.log",
            cwd=ROOT,
        )
        try:
            started = time.monotonic()
            status = wait_settled(gateway, timeout=300)
            require_ready(status)
            print(
                f"record gateway on port {gateway.port}: {len(status['servers'])} servers ready, {status['tools']} tools "
                f"({time.monotonic() - started:.1f}s)"
            )
            steps, skipped, n_tools, n_prompts, read_only = anyio.run(plan_session, gateway.url("planning"))
            print(
                f"session: {len(steps)} requests ({sum(s.kind == 'tool' for s in steps)} tool calls over "
                f"{len({s.target for s in steps if s.kind == 'tool'})} of {n_tools} tools, {n_prompts} prompts)"
            )
            reads = newcomer_reads(steps, read_only)
            print(f"newcomer pass: {len(reads)} reads of tracked servers, recorded first at the starting state")
            recorded_reads = anyio.run(play, gateway.url(session.RUN_ID + "-reads"), reads, "legacy")
            recorded = anyio.run(play, gateway.url(session.RUN_ID), steps, "legacy")
            status = gateway.status()
            require_ready(status)  # nobody crashed during the session
        finally:
            stop_gateway(gateway)
        print(f"record gateway stopped (exit code {gateway.process.returncode})")
        if gateway.process.returncode not in (0, -signal.SIGTERM):
            raise Failure(f"record gateway exited with {gateway.process.returncode}:\n{gateway.log_tail()}")
        totals = print_table(steps, recorded, skipped)
        print(f"\ntool calls: {dict(totals)}; skipped tools: {len(skipped)}")
        transport = [o["step"] for o in recorded if "transport_error" in o]
        if transport:
            raise Failure(f"requests without an answer (not recorded): {transport}")
        check_environment_answer(steps, recorded)
        failed_reads = [o["step"] for o in recorded_reads if "result" not in o]
        if failed_reads:
            raise Failure(f"newcomer reads without a result: {failed_reads}")
    except BaseException:
        shutil.rmtree(
            CASSETTE, ignore_errors=True
        )  # a half or unsafe recording is never left where it could be committed
        raise
    return steps, recorded, status, (reads, recorded_reads)
