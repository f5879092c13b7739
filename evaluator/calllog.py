"""Call-log records: one plain dict per tools/call through the gateway.

The evaluator never needs more than dicts in, numbers out, so records stay
plain dicts (no per-record objects: a million of them must be cheap). Records
come from an exported JSONL file (`read_calls`) or from any iterable of dicts,
for example `recorder.calllog.iter_calls(cassette_dir)` (`check_calls`).

Checking is deliberately light: the fields the metrics read must have the
right shape; everything else is passed through untouched.

The gateway also logs each model exchange (server `@model`, llm.call_record) so a
run's log is its whole timeline; those are not tool calls, and the readers here
leave them out, so every metric counts tool calls only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mcpgw.evaluator.errors import InputError
from mcpgw.evaluator.jsonio import iter_jsonl, kind

OUTCOMES = frozenset({"ok", "tool_error", "rejected", "upstream_error", "timeout", "miss", "diverged"})
SOURCES = frozenset({"recorded", "equivalent", "live", "simulated", "missed", "replay"})  # replay: older logs
_VALID_VALUES = (True, False, None)
MODEL_SERVER = "@model"  # the gateway's pseudo-server of model exchanges (llm.passthrough)


def is_model_record(record: Any) -> bool:
    return isinstance(record, dict) and record.get("server") == MODEL_SERVER


def check_record(record: Any, source: str, line: int | None) -> dict[str, Any]:
    """Raise InputError naming the field when `record` cannot be a call-log record."""
    if not isinstance(record, dict):
        raise InputError(source, line, None, f"expected a call record (JSON object), got {kind(record)}")
    run_id = record.get("run_id")
    if run_id is None or isinstance(run_id, bool) or not isinstance(run_id, (str, int)):
        problem = "missing" if run_id is None else f"expected a string, got {kind(run_id)}"
        raise InputError(source, line, "run_id", problem)
    if not isinstance(run_id, str):
        record["run_id"] = str(run_id)  # numeric run ids are common in harnesses
    outcome = record.get("outcome")
    if outcome not in OUTCOMES:
        expected = ", ".join(sorted(OUTCOMES))
        problem = "missing" if outcome is None else f"{outcome!r} is not one of {expected}"
        raise InputError(source, line, "outcome", problem)
    name = record.get("exposed_name")
    if not isinstance(name, str):
        problem = "missing" if name is None else f"expected a string, got {kind(name)}"
        raise InputError(source, line, "exposed_name", problem)
    for key in ("server", "tool"):
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(source, line, key, f"expected a string or null, got {kind(value)}")
    for key in ("known_tool", "is_error"):
        value = record.get(key)
        if value is not None and not isinstance(value, bool):
            raise InputError(source, line, key, f"expected true or false, got {kind(value)}")
    if record.get("known_tool") is None:
        record["known_tool"] = record.get("tool") is not None
    if record.get("is_error") is None:
        record["is_error"] = outcome == "tool_error"
    latency = record.get("latency_ms")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
        raise InputError(source, line, "latency_ms", f"expected a number, got {kind(latency)}")
    _check_validation(record.get("validation"), source, line)
    return record


def _check_validation(validation: Any, source: str, line: int | None) -> None:
    if validation is None:
        return
    if not isinstance(validation, dict):
        raise InputError(source, line, "validation", f"expected an object, got {kind(validation)}")
    if validation.get("valid") not in _VALID_VALUES:
        got = kind(validation.get("valid"))
        raise InputError(source, line, "validation.valid", f"expected true, false or null, got {got}")
    errors = validation.get("errors")
    if errors is None:
        return
    if not isinstance(errors, list):
        raise InputError(source, line, "validation.errors", f"expected a list, got {kind(errors)}")
    for index, error in enumerate(errors):
        if not isinstance(error, dict):
            raise InputError(source, line, f"validation.errors[{index}]", f"expected an object, got {kind(error)}")


def read_calls(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records from an exported JSONL call log, each checked; errors name file and line."""
    source = str(path)
    for line, record in iter_jsonl(path):
        if not is_model_record(record):
            yield check_record(record, source, line)


def check_calls(records: Iterable[Any], source: str = "<calls>") -> Iterator[dict[str, Any]]:
    """Check records from any iterable (a cassette reader, a list); 'line' is the record's position."""
    for position, record in enumerate(records, 1):
        if not is_model_record(record):
            yield check_record(record, source, position)


# Fields whose text repeats from record to record (a run's id in each of its calls, a server's name in each of its
# calls): a log held whole for the evaluation shares one copy of each text, about a quarter of its memory.
REPEATED_FIELDS = (
    "run_id",
    "session_id",
    "lane",
    "server",
    "tool",
    "exposed_name",
    "client_name",
    "protocol_version",
    "outcome",
    "source",
    "input_schema_digest",
    "server_title",
)


# Fields of a call record that no part of the evaluation reads (the replay's and the recorder's business): left out
# of a log held whole. (`result_digest` stays: `eval --noise` compares the answers of repeated calls by it.)
UNREAD_FIELDS = ("output_validation", "cassette_key", "upstream_ms")


def compact(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The records as the evaluation holds them: without UNREAD_FIELDS, and each of their REPEATED_FIELDS texts
    replaced by the one equal text seen first (the same value: a string never changes)."""
    seen: dict[str, str] = {}
    for record in records:
        for field in UNREAD_FIELDS:
            record.pop(field, None)
        for field in REPEATED_FIELDS:
            value = record.get(field)
            if type(value) is str:
                record[field] = seen.setdefault(value, value)
        yield record


def group_by_run(records: Iterable[dict[str, Any]], by: str = "run") -> dict[str, list[dict[str, Any]]]:
    """run_id -> that run's calls, in call order (by `seq`, which the recorder numbers globally,
    when every call has one; else as read). `by="session"`: one task per run and group of MCP sessions
    opened together (`<run>/<first session>`, see `_session_tasks`): MCP-Bench's runner opens a fresh
    session per server and task, all of a task's before its first call, so a multi-server task is one
    task, not one per server."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        run_id = record["run_id"] if by == "run" else f"{record['run_id']}/{record.get('session_id') or '-'}"
        calls = runs.get(run_id)
        if calls is None:
            runs[run_id] = [record]
        else:
            calls.append(record)
    if by == "session":
        runs = _session_tasks(runs)
    for calls in runs.values():
        _order_by_seq(calls)
    return runs


def _session_tasks(sessions: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Sessions of one run merged into tasks: a session opened (its calls' `session_opened`) no later than
    the first call of the task being filled joins it; one opened after that call begins the next task.
    A harness that opens a task's sessions together and then calls (MCP-Bench's runner: one per server of
    the task, its distraction servers too) gets exactly its tasks; sessions whose calls do not say when
    they were opened (older logs, sessionless calls) stay a task each."""
    tasks: dict[str, list[dict[str, Any]]] = {}
    timed: dict[str, list[tuple[str, str, str]]] = {}  # run -> (opened, first call, key)
    for key, calls in sessions.items():
        opened = calls[0].get("session_opened")
        starts: list[Any] = [c.get("started_at") for c in calls]
        if not isinstance(opened, str) or not all(isinstance(s, str) for s in starts):
            tasks[key] = calls
            continue
        timed.setdefault(calls[0]["run_id"], []).append((opened, min(starts), key))
    for entries in timed.values():
        current: list[dict[str, Any]] | None = None
        first_call = ""
        for opened, first, key in sorted(entries):
            if current is not None and opened <= first_call:
                current.extend(sessions[key])
                first_call = min(first_call, first)
            else:
                current = tasks[key] = list(sessions[key])
                first_call = first
    return {key: tasks[key] for key in sessions if key in tasks}  # in the order the log first names them


def _order_by_seq(calls: list[dict[str, Any]]) -> None:
    # Logs are usually already in order; only sort when they are not (sessions can interleave).
    previous = None
    for call in calls:
        seq = call.get("seq")
        if not isinstance(seq, (int, float)) or isinstance(seq, bool):
            return  # no usable seq: keep the order as read
        if previous is not None and seq < previous:
            calls.sort(key=lambda c: c["seq"])
            return
        previous = seq
