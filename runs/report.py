"""What `mcpgw run` says while and after it runs (a local run and a Ray fan-out alike): a progress bar on a
terminal, then one summary line, the answers file, and each task that did not finish."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def summary(result: Any, answers_path: Path, log_cassette: str | None, elapsed: float) -> int:
    from collections import Counter

    counts = Counter(a["status"] for a in result.answers)
    tokens = sum(a["tokens"]["total"] for a in result.answers)
    print(
        f"mcpgw: {len(result.answers)} task(s) in {elapsed:.1f}s ({result.skipped} already done): "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + f"; {tokens} tokens",
        file=sys.stderr,
    )
    print(f"mcpgw: answers in {answers_path}", file=sys.stderr)
    if log_cassette:
        print(f"mcpgw: score with: mcpgw eval --run {log_cassette}", file=sys.stderr)
    failed = [a for a in result.answers if a["status"] not in ("ok", "max_rounds")]
    for answer in failed:
        print(
            f"mcpgw: task {answer['task_id']} (run {answer['run_id']}): {answer['status']}: {answer.get('error')}",
            file=sys.stderr,
        )
    return 1 if failed else 0


class Progress:
    """A rich progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self._bar = (
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            if console.is_terminal
            else None
        )
        self._task: Any = None

    def start(self, label: str, total: int) -> None:
        if self._bar is not None and total:
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)

    def advance(self) -> None:
        if self._task is not None:
            self._bar.advance(self._task)

    def finish(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None
