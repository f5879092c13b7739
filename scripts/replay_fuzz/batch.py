"""One batch of sequences: record S, the live ground truth, replay S unchanged and twice, replay S' (and hybrid)."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

from .comparison import Report, compare
from .gateway_process import Gateway, config_text, start_gateway
from .runner import Runner, close_all


def single_tagged(seq: dict) -> bool:
    return len(seq["lanes"]) == 1 and seq["lanes"][0][0] in ("hdr", "qry")


def reset_shared(root: Path, i: int) -> None:
    d = root / f"s{i}"
    shutil.rmtree(d, ignore_errors=True)
    (d / "d").mkdir(parents=True)
    (d / "a.txt").write_text("alpha\n")
    (d / "d" / "c.txt").write_text("gamma\n")


def run_batch(
    report: Report,
    work: Path,
    layout: str,
    seed: int,
    batch: int,
    seqs: list[dict],
    mutants: list,
    live: Gateway,
    truth_root: Path | None,
    miss_as_tool_error: bool,
    replay_workers: int = 1,
    hybrid: bool = False,
    parallel_record: float = 0.0,
) -> None:
    isolated = layout == "isolated"
    root = work / "X"
    cass = work / "cassettes"
    name = f"b{seed}-{batch}"
    cfg = config_text("${RUN_STATE_DIR}" if isolated else str(root), isolated)
    roots = [str(root)] + ([str(truth_root)] if truth_root else [])
    extra = ["--miss-as-tool-error"] if miss_as_tool_error else []
    if replay_workers > 1:
        extra += ["--workers", str(replay_workers)]

    def ids(i: int, seq: dict, tag: str) -> list[str | None]:
        return [None if kind in ("anon", "m26") else f"{tag}{seed}-{batch}-{i}-{nm}" for kind, nm in seq["lanes"]]

    def prefix(i: int) -> str:
        return "" if isolated else f"s{i}"

    # 1. record
    if not isolated:
        for i in range(len(seqs)):
            reset_shared(root, i)
    rec = start_gateway(work, cfg, "record", name, cass)
    recorded = []
    try:
        for i, seq in enumerate(seqs):
            sessions: dict = {}
            recorded.append(
                Runner(rec, prefix(i)).play(
                    seq,
                    ids(i, seq, "r"),
                    sessions,
                    parallel=parallel_record,
                    rng=random.Random(seed * 7919 + batch * 131 + i),
                )
            )
            close_all(sessions)
            report.calls += sum(1 for a in recorded[-1] if a is not None)
            report.rpc_errors += sum(1 for a in recorded[-1] if a is not None and "error" in a)
    finally:
        rec.stop()

    # 2. ground truth: S' from the initial state; S;S (the same run ids twice) from the initial state
    truth_mut, truth_twice = [], []
    nonce = f"{int(time.time() * 1000) % 10**8}"
    for i, seq in enumerate(seqs):
        live_prefix = prefix(i)
        if not isolated:
            reset_shared(truth_root, i)
        truth_mut.append(Runner(live, live_prefix).play(mutants[i][0], ids(i, seq, f"t{nonce}m")))
        if not isolated:
            reset_shared(truth_root, i)
        sessions = {}
        run_ids = ids(i, seq, f"t{nonce}w")
        first = Runner(live, live_prefix).play(seq, run_ids, sessions)
        close_all(sessions)  # a second evaluation: new sessions, the same run ids
        second = Runner(live, live_prefix).play(seq, run_ids, {})
        truth_twice.append((first, second))
        report.calls += sum(1 for a in truth_mut[-1] + first + second if a is not None)

    # 3. replay S unchanged, then S again with the same run ids (one replay gateway)
    rep = start_gateway(work, cfg, "replay", name, cass, *extra)
    try:
        for i, seq in enumerate(seqs):
            base = dict(
                layout=layout,
                seed=seed,
                seq_index=batch * 1000 + i,
                recorded=seq,
                ops=[],
                single_tagged=single_tagged(seq),
            )
            sessions = {}
            runner = Runner(rep, prefix(i))
            again = runner.play(seq, ids(i, seq, "r"), sessions)
            close_all(sessions)
            # recorded with parallel calls, a pair that arrived in the other order is keyed in that order:
            # replayed one at a time it misses, a refusal, not a wrong answer
            compare(
                report,
                {**base, "check": "unchanged", "replayed": seq},
                again,
                recorded[i],
                roots,
                refusals_ok=parallel_record > 0,
            )
            twice = runner.play(seq, ids(i, seq, "r"), {})
            compare(
                report, {**base, "check": "twice", "replayed": seq}, twice, truth_twice[i][1], roots, refusals_ok=True
            )
            report.calls += sum(1 for a in again + twice if a is not None)
    finally:
        rep.stop()

    # 4. replay S' on a fresh replay gateway
    def play_mutants(gateway: Gateway, check: str) -> None:
        """Each S' on `gateway`, every answer compared with S' live (a refusal allowed)."""
        try:
            for i, seq in enumerate(seqs):
                mut, ops = mutants[i]
                answers = Runner(gateway, prefix(i)).play(mut, ids(i, seq, "r"))
                base = dict(
                    layout=layout,
                    seed=seed,
                    seq_index=batch * 1000 + i,
                    recorded=seq,
                    ops=ops,
                    single_tagged=single_tagged(seq) and single_tagged(mut),
                )
                compare(
                    report,
                    {**base, "check": check, "replayed": mut},
                    answers,
                    truth_mut[i],
                    roots,
                    refusals_ok=True,
                    hybrid=check == "hybrid",
                )
                report.calls += sum(1 for a in answers if a is not None)
        finally:
            gateway.stop()

    play_mutants(start_gateway(work, cfg, "replay", name, cass, *extra), "mutant")
    # 5. hybrid: S' on a copy of the recording; misses go live (fresh instance caught up on the run's history)
    if hybrid:
        if not isolated:
            for i in range(len(seqs)):
                reset_shared(root, i)
        shutil.copytree(cass / name, cass / (name + "-h"))
        play_mutants(start_gateway(work, cfg, "hybrid", name + "-h", cass, "--run-idle-timeout", "600"), "hybrid")
    report.sequences += len(seqs)
