"""The fuzzing loop: batches of generated and mutated sequences against one live gateway, within a budget."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from .batch import run_batch
from .comparison import Report
from .gateway_process import config_text, start_gateway
from .mutations import mutate
from .sequences import gen_sequence


def run_fuzz(
    seed: int,
    sequences: int,
    layout: str = "isolated",
    budget: float = 900.0,
    batch_size: int = 20,
    work: Path | None = None,
    log=print,
    replay_workers: int = 1,
    hybrid: bool = False,
    modern: bool = False,
    parallel_record: float = 0.0,
) -> Report:
    """Fuzz `sequences` sequences (fewer if `budget` seconds run out); the Report's `wrong` lists
    every replay answer that was a result other than the live one."""
    started = time.monotonic()
    report = Report()
    rng = random.Random(seed)
    own = work is None
    work = Path(tempfile.mkdtemp(prefix=f"difz-{layout}-")) if own else work
    work.mkdir(parents=True, exist_ok=True)
    truth_root = work / "T"
    (work / "X").mkdir(exist_ok=True)
    truth_root.mkdir(exist_ok=True)
    isolated = layout == "isolated"
    live_cfg = config_text("${RUN_STATE_DIR}" if isolated else str(truth_root), isolated)
    live = start_gateway(
        work / "live", live_cfg, "live", "truth-log", work / "live-cassettes", "--run-idle-timeout", "600"
    )
    try:
        batch = 0
        while report.sequences < sequences and time.monotonic() - started < budget:
            n = min(batch_size, sequences - report.sequences)
            seqs = [gen_sequence(rng, modern) for _ in range(n)]
            mutants = [mutate(s, rng) for s in seqs]
            run_batch(
                report,
                work,
                layout,
                seed,
                batch,
                seqs,
                mutants,
                live,
                None if isolated else truth_root,
                miss_as_tool_error=(batch % 2 == 1),
                replay_workers=replay_workers,
                hybrid=hybrid,
                parallel_record=parallel_record,
            )
            batch += 1
            log(
                f"[{layout} seed={seed}] batch {batch}: {report.sequences} sequences, {report.calls} calls, "
                f"{report.compared} compared, {report.refusals} refusals, {len(report.wrong)} wrong, "
                f"{len(report.cross_lane)} cross-lane, {len(report.errors)} errors, {report.rpc_errors} rpc errors recording, {time.monotonic() - started:.0f}s {json.dumps(report.by_check)}"
            )
    finally:
        live.stop()
        report.seconds = time.monotonic() - started
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return report


def check_replay(seed: int, sequences: int, layout: str = "isolated", budget: float = 300.0, **options) -> Report:
    """Fuzz, and fail (AssertionError naming the first findings) on any replay answer that is a result
    other than the live one. Bounded: stops starting batches once `budget` seconds have passed."""
    report = run_fuzz(seed, sequences, layout, budget, batch_size=options.pop("batch_size", 5), **options)
    assert report.compared > 0, "nothing was compared"
    assert not report.wrong, f"{len(report.wrong)} wrong replay answer(s):\n" + "\n".join(
        f.brief() for f in report.wrong[:3]
    )
    assert not report.errors, f"{len(report.errors)} error(s) that are no refusal:\n" + "\n".join(
        f.brief() for f in report.errors[:3]
    )
    return report
