"""Replay logs: the call log of each replay or hybrid session, kept with the cassette it plays.

    cassettes/<name>/data.mdb                          the recording (a replay never writes it)
    cassettes/<name>/runs/<stamp>-<mode>/data.mdb      one session's call log, a cassette of its own

One folder per `mcpgw serve` keeps sessions apart without touching the recorded
bytes, and lets `cassette ls` group them under their cassette and `cassette prune`
drop old ones. Readers pick a call log with `select_logs`: the recording's own
(`recorded`), the newest session's (`last`), one session by stamp, or `all`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from mcpgw.cassette.on_disk import in_use
from mcpgw.cassette.paths import existing_cassette, is_cassette
from mcpgw.cassette.store import CassetteFormatError, CassetteStore
from mcpgw.gateway.errors.tree import GatewayError

RUNS_DIR = "runs"
CHOICES = "recorded, last, all or a session stamp"


def new_log_path(cassette: Path, mode: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    return Path(cassette) / RUNS_DIR / f"{stamp}-{mode}"


def replay_logs(cassette: Path) -> list[Path]:
    """The session folders of a cassette, oldest first (stamps sort as text)."""
    folder = Path(cassette) / RUNS_DIR
    return sorted(p for p in folder.iterdir() if is_cassette(p)) if folder.is_dir() else []


def log_home(cassettes_dir: Path, cassette: Path) -> Path:
    """Where a replay of `cassette` keeps its session logs: inside it, unless it lies outside the
    cassettes folder (the default cassette installed with the package, a path given by hand):
    then in the cassettes folder, under the cassette's name (mcpgw writes only there)."""
    if Path(cassettes_dir).resolve() in Path(cassette).resolve().parents:
        return Path(cassette)
    return Path(cassettes_dir) / Path(cassette).name


def session_logs(cassette: Path, cassettes_dir: Path | None = None) -> list[Path]:
    """The replay logs of `cassette`, oldest first: those inside it and, given the cassettes folder,
    those its replays left there (`log_home`)."""
    logs = replay_logs(cassette)
    if cassettes_dir is not None and log_home(cassettes_dir, cassette).resolve() != Path(cassette).resolve():
        logs += replay_logs(log_home(cassettes_dir, cassette))
    return sorted(logs, key=lambda p: p.name)


def select_logs(cassette: Path, which: str | None, cassettes_dir: Path | None = None) -> list[Path]:
    """Call-log folders for `which` (default `recorded`: the cassette's own)."""
    which = which or "recorded"
    logs = session_logs(cassette, cassettes_dir)
    if which == "recorded":
        return [Path(cassette)]
    if which == "all":
        return [Path(cassette), *logs]
    if which == "last":
        if not logs:
            raise GatewayError(
                f"cassette {cassette} has no replay logs yet (they appear after a replay or hybrid serve)"
            )
        return [logs[-1]]
    chosen = [p for p in logs if p.name.startswith(which)]
    if len(chosen) != 1:
        names = ", ".join(p.name for p in logs[-5:]) or "none"
        problem = "matches several" if chosen else "matches none"
        raise GatewayError(
            f"--log {which!r} {problem} of the replay logs of {cassette} (latest: {names}); use {CHOICES}"
        )
    return chosen


def call_log_paths(cassettes_dir: Path, cassette: str, which: str | None) -> list[Path]:
    """The call-log folders `--log which` picks from a cassette given by name or path."""
    return select_logs(existing_cassette(Path(cassettes_dir), cassette), which, Path(cassettes_dir))


def log_note(cassette_dir: Path, which: str | None, cassettes_dir: Path | None = None) -> str | None:
    """A hint when the default (recorded) log was read but newer replay logs sit beside it."""
    logs = session_logs(cassette_dir, cassettes_dir) if (which or "recorded") == "recorded" else []
    if not logs:
        return None
    return (
        f"note: {cassette_dir} also keeps {len(logs)} replay log(s), not read; "
        f"--log last (newest: {logs[-1].name}), --log STAMP or --log all"
    )


def add_log_option(parser: Any) -> None:
    parser.add_argument(
        "--log",
        metavar="WHICH",
        default=None,
        help="which call log of the cassette: recorded (default: the recording's own), last "
        "(the newest replay/hybrid session's), all, or a session stamp (see `cassette show`)",
    )


def iter_records(path: Path, db: str) -> Iterator[dict[str, Any]]:
    """Every value of one database of a cassette folder, in order (read-only)."""
    try:
        store = CassetteStore(path, create=False, readonly=True)
    except CassetteFormatError as exc:
        raise GatewayError(str(exc)) from None
    try:
        for _, value in store.items(db):
            yield value
    finally:
        store.env.close()


# A call record's `source` when the cassette answered it: "replay" (older logs), "recorded" (that very call)
# or "equivalent" (a call recorded as equal to it); "simulated" answers are counted apart, not as hits.
HIT_SOURCES = frozenset({"replay", "recorded", "equivalent"})


def fidelity(path: Path) -> dict[str, Any]:
    """How faithfully one session was served from the cassette, from its call records.

    hits: answered from the recording (ok or tool_error from a HIT_SOURCES source; model exchanges: hit);
    simulated: answered by a simulation; misses: outcome `miss` (or source `missed`); diverged lanes: distinct
    run ids with a `diverged` call; live: answered live.
    """
    calls = hits = misses = live = simulated = 0
    diverged: set[str] = set()
    sources: dict[str, int] = {}  # every record's source, counted (replay.answer_sources)
    for record in iter_records(path, "calls"):
        calls += 1
        outcome, source = record.get("outcome"), record.get("source")
        if source is not None:
            sources[source] = sources.get(source, 0) + 1
        if outcome == "miss" or source == "missed":
            misses += 1
        elif outcome == "diverged":
            diverged.add(str(record.get("run_id")))
        elif outcome in ("ok", "tool_error", "hit") and source in HIT_SOURCES:  # hit: a model exchange
            hits += 1
        elif source == "simulated":
            simulated += 1
        if source == "live":
            live += 1
    runs = list(iter_records(path, "runs"))
    summary = runs[-1] if runs else {}
    return {
        "log": path.name,
        "path": str(path),
        "mode": summary.get("mode") or path.name.rsplit("-", 1)[-1],
        "started": summary.get("started"),
        "ended": summary.get("ended"),
        "calls": calls,
        "hits": hits,
        "misses": misses,
        "diverged_lanes": len(diverged),
        "live": live,
        "simulated": simulated,
        "sources": sources,
    }


class Pruned(NamedTuple):
    removed: list[Path]
    in_use: list[Path]  # due for removal, but a running gateway still writes it: left


def prune(
    cassette: Path,
    *,
    keep: int | None = None,
    older_than: float | None = None,
    dry_run: bool = False,
    cassettes_dir: Path | None = None,
) -> Pruned:
    """Remove replay logs beyond the newest `keep`, and/or those older than `older_than` seconds; never one a
    running gateway has open (its later calls would be logged nowhere)."""
    logs = session_logs(cassette, cassettes_dir)
    doomed: list[Path] = []
    if keep is not None:
        doomed += logs[: max(0, len(logs) - keep)]
    if older_than is not None:
        cutoff = time.time() - older_than
        doomed += [p for p in logs if _stamp_time(p) < cutoff and p not in doomed]
    busy = [p for p in doomed if in_use(p)]
    doomed = [p for p in doomed if p not in busy]
    if not dry_run:
        for path in doomed:
            shutil.rmtree(path)
    return Pruned(doomed, busy)


def _stamp_time(path: Path) -> float:
    try:
        return datetime.strptime(path.name[:22], "%Y%m%d-%H%M%S-%f").replace(tzinfo=UTC).timestamp()
    except ValueError:  # a folder someone named by hand: its modification time
        return path.stat().st_mtime
