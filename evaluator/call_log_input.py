"""Where `mcpgw eval` and `mcpgw audit` read their calls from: `--calls` JSONL files and cassettes (a name or a
path, `--log` choosing among its replay logs), records read one at a time, duplicates given twice dropped."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from mcpgw.evaluator.errors import EvaluatorError, SourceUnavailable


def load_calls(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Records from --calls (JSONL) and/or --cassette (through the recorder, when installed), as a list."""
    from mcpgw.evaluator.calllog import compact

    return list(compact(iter_given_calls(args)))


def iter_given_calls(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Records from --calls (JSONL) and/or --cassette, one at a time: a consumer that aggregates (the audit)
    holds none of them, whatever the log's size. Duplicates are dropped, except when the one input is one
    cassette log: its records are numbered by the store (seq), so none can equal another, and the digests
    kept to find them would grow with the log."""
    from mcpgw.evaluator.calllog import read_calls

    calls_file, cassette = getattr(args, "calls", None), getattr(args, "cassette", None)
    if cassette:
        import mcpgw.recorder.calllog  # noqa: F401 - first-party: a broken install fails loudly, before anything else
    # Without --calls, the cassette's logs are found first (a wrong --log is told before anything is read).
    paths = cassette_logs(args) if cassette and not calls_file else None
    if paths is not None and len(paths) == 1:
        yield from _cassette_calls(paths[0])
        return

    def every_record() -> Iterator[dict[str, Any]]:
        if calls_file:
            yield from read_calls(calls_file)
        for path in (paths if paths is not None else cassette_logs(args)) if cassette else []:
            yield from _cassette_calls(path)

    yield from drop_duplicates(every_record())


def _cassette_calls(path: Path) -> Iterator[dict[str, Any]]:
    from mcpgw.evaluator.calllog import check_calls
    from mcpgw.recorder.calllog import iter_calls  # first-party: a broken install fails loudly, never quietly

    try:
        yield from check_calls(iter_calls(path), source=f"cassette {path}")
    except EvaluatorError:
        raise
    except Exception as exc:  # noqa: BLE001 - the recorder's own errors, mapped here once
        raise SourceUnavailable(f"cannot read the call log of cassette {path}: {exc}") from None


def drop_duplicates(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Records identical in every field to an earlier one left out: the same call given through two inputs
    counts once. A distinct call differs at least in its seq and time, so nothing real is lost."""
    import hashlib
    import json

    seen: set[bytes] = set()  # digests, not the texts: a million records must stay cheap
    dropped = 0
    for record in records:
        digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).digest()
        if digest in seen:
            dropped += 1
            continue
        seen.add(digest)
        yield record
    if dropped:
        print(
            f"mcpgw: dropped {dropped} duplicate call record(s), each identical to one already "
            "read (e.g. --calls exported from the --cassette also given)",
            file=sys.stderr,
        )


def cassette_logs(args: argparse.Namespace) -> list[Path]:
    """The call-log folders of --cassette (a name in --cassettes-dir, or a path) that --log picks."""
    from mcpgw.gateway.errors.tree import GatewayError
    from mcpgw.recorder.replay_logs import call_log_paths, log_note

    try:
        paths = call_log_paths(Path(args.cassettes_dir), args.cassette, args.log)
    except GatewayError as exc:
        raise SourceUnavailable(exc.message) from None
    note = log_note(paths[0], args.log, Path(args.cassettes_dir))
    if note:
        print(f"mcpgw: {note}", file=sys.stderr)
    return paths


def _load_with_status(args: argparse.Namespace) -> list[dict[str, Any]]:
    if not (getattr(args, "calls", None) or getattr(args, "cassette", None)):
        return []
    with _reading_status():
        return load_calls(args)


def _reading_status() -> AbstractContextManager[Any]:
    """A "reading the call log..." spinner on stderr, when it is a terminal."""
    from rich.console import Console

    console = Console(stderr=True)
    return console.status("reading the call log...") if console.is_terminal else nullcontext()
