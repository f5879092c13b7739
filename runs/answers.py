"""`answers.jsonl`: one line per task, in task order, with only what the run
decides (run id, task id, attempt, final answer, rounds, tokens, status), so a
replayed run writes the same bytes. Lines are appended as tasks finish (a crash
keeps them) and the file is rewritten in task order at the end. Finished tasks
(status ok or max_rounds) are kept on resume; others run again, as a new attempt
(runs.attempts). Records are keyed by the task's run id without its attempt."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcpgw.runs.attempts import base_of

FINISHED = ("ok", "max_rounds")


def line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def read_finished(path: Path) -> dict[str, dict[str, Any]]:
    """task run id (no attempt suffix) -> answer of the tasks a previous attempt finished."""
    if not path.exists():
        return {}
    out = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(text)
        except ValueError:
            continue  # a line cut by a crash: that task runs again
        if isinstance(record, dict) and record.get("status") in FINISHED and isinstance(record.get("run_id"), str):
            out[base_of(record)] = record
    return out


def check_answers_path(path: Path, task_files: list[str]) -> None:
    """Refuse an `--answers` file the run would destroy: it is rewritten in place, so it must be an answers
    file (or new), not a task file, a folder, or anything else that happens to be there."""
    from mcpgw.gateway.errors.tree import GatewayError

    if path.is_dir():
        raise GatewayError(f"--answers {path}: a folder; name the answers file (e.g. {path / 'answers.jsonl'})")
    if any(path.resolve() == Path(task).resolve() for task in task_files):
        raise GatewayError(f"--answers {path}: that is a task file of this run; the answers go to another file")
    if not path.exists():
        return
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise GatewayError(f"--answers {path}: cannot read it as an answers file ({exc}); name another file") from None
    for number, text in enumerate(lines, 1):
        try:
            record = json.loads(text) if text.strip() else {"run_id": ""}
        except ValueError:
            if number == len(lines) and text.startswith("{"):
                continue  # a last line cut by a crash
            record = None
        if not (isinstance(record, dict) and "run_id" in record):
            raise GatewayError(
                f"--answers {path}:{number}: not an answers file (each line is one task's answer, "
                "JSON with a run_id), and the run would overwrite it; name another file"
            )


class AnswersFile:
    def __init__(self, path: Path, kept: dict[str, dict[str, Any]]) -> None:
        self.path = path
        self.records = dict(kept)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._write_all(list(kept.values()))  # drop unfinished lines of an earlier attempt
        self._handle = path.open("a", encoding="utf-8")

    def add(self, record: dict[str, Any]) -> None:
        self.records[base_of(record)] = record
        self._handle.write(line(record))
        self._handle.flush()

    def finish(self, order: list[str]) -> list[dict[str, Any]]:
        self._handle.close()
        ordered = [self.records[r] for r in order if r in self.records]
        self._write_all(ordered)
        return ordered

    def _write_all(self, records: list[dict[str, Any]]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text("".join(line(r) for r in records), encoding="utf-8")
        os.replace(temporary, self.path)
