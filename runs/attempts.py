"""Attempts of a task: each runs in a lane of its own, and replay follows the final one.

A task's first attempt has the run id `<prefix><task id>`; when a record run is
resumed, a task that did not finish runs again as `<prefix><task id>~2`, then
`~3`..., so the new attempt's tool and model exchanges never join the failed
attempt's lane (replay answers a lane in its recorded order: a mixed lane would
answer the retry with the failed attempt's 500). The number comes from the lanes
already in the cassette, so even an attempt cut short by Ctrl-C (no answer line
written) is not reused. Each answer line says its `attempt`; the manifests the
runs leave in the cassette (runs.manifest) say which attempt was final, and a
replayed or hybrid run uses that one's lane.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SEPARATOR = "~"


def run_id_of(base: str, attempt: int) -> str:
    return base if attempt <= 1 else f"{base}{SEPARATOR}{attempt}"


def base_of(record: dict[str, Any]) -> str:
    """The task's run id without its attempt suffix (`<prefix><task id>`)."""
    attempt = record.get("attempt") or 1
    run_id = str(record["run_id"])
    return run_id.removesuffix(f"{SEPARATOR}{attempt}") if attempt > 1 else run_id


def plan(status: dict[str, Any], bases: list[str]) -> dict[str, int]:
    """base -> the attempt to run now: the next one when recording, the final recorded one when
    replaying (hybrid too), the first otherwise."""
    if status.get("mode") == "record" and status.get("cassette"):
        highest = highest_attempts(Path(status["cassette"]), set(bases))
        return {base: highest.get(base, 0) + 1 for base in bases}
    if status.get("mode") in ("replay", "hybrid") and status.get("recording"):
        final = final_attempts(Path(status["recording"]))
        return {base: final.get(base, 1) for base in bases}
    return {base: 1 for base in bases}


def highest_attempts(cassette: Path, bases: set[str]) -> dict[str, int]:
    """base -> highest attempt with exchanges recorded in `cassette` (read-only, while the gateway writes)."""
    from mcpgw.cassette.store import CassetteStore

    if not (cassette / "data.mdb").exists():
        return {}
    lanes: set[str] = set()
    store = CassetteStore(cassette, create=False, readonly=True)
    try:
        for _, entry in store.items("exchanges"):
            lanes.add(str(entry.get("lane") or ""))
    finally:
        store.env.close()
    out: dict[str, int] = {}
    for lane in lanes:
        base, attempt = lane, 1
        if lane not in bases:
            base, _, number = lane.rpartition(SEPARATOR)
            if base not in bases or not number.isdigit():
                continue
            attempt = int(number)
        out[base] = max(out.get(base, 0), attempt)
    return out


def final_attempts(cassette: Path) -> dict[str, int]:
    """base -> the attempt whose answer the latest run of that task kept (from the cassette's manifests)."""
    from mcpgw.cassette.cassette import Cassette
    from mcpgw.runs.manifest import KIND

    recording = Cassette(cassette, create=False, readonly=True)
    try:
        manifests = [r for r in recording.runs() if r.get("kind") == KIND]
    finally:
        recording.close()
    out: dict[str, int] = {}
    for manifest in manifests:
        for answer in manifest.get("answers") or ():
            if isinstance(answer, dict) and isinstance(answer.get("run_id"), str):
                out[base_of(answer)] = answer.get("attempt") or 1
    return out
