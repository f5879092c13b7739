"""On a miss, say which recorded requests were nearest and how they differ."""

from __future__ import annotations

import json
from typing import Any


ARGUMENTS_SHOWN = 600  # characters of a nearest recording's arguments: whole, for all but the largest


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)  # sorted: comparable with the recording
    return text if len(text) <= limit else text[:limit - 3] + "..."


def differences(wanted: Any, recorded: Any, path: str = "") -> list[str]:
    """Differences between two argument values, as short phrases naming where (`entities[0].name`):
    nested objects and lists are followed down, so a difference deep inside is shown, not cut off."""
    if isinstance(wanted, dict) and isinstance(recorded, dict):
        out = []
        for key in sorted(set(wanted) | set(recorded)):
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded:
                out.append(f"{where}={_short(wanted[key])} was not in the recording")
            elif key not in wanted:
                out.append(f"{where}={_short(recorded[key])} recorded but not asked")
            else:
                out += differences(wanted[key], recorded[key], where)
        return out
    if isinstance(wanted, list) and isinstance(recorded, list) and path:
        if len(wanted) != len(recorded):
            return [f"{path}: recorded {len(recorded)} item(s), asked {len(wanted)}"]
        return [d for i, (w, r) in enumerate(zip(wanted, recorded)) for d in differences(w, r, f"{path}[{i}]")]
    if wanted == recorded:
        return []
    if isinstance(wanted, str) and isinstance(recorded, str):
        shown_recorded, shown_wanted = _where_strings_differ(recorded, wanted)
    else:
        shown_recorded, shown_wanted = _short(recorded), _short(wanted)
    return [f"{path}: recorded {shown_recorded}, asked {shown_wanted}" if path else f"{shown_recorded} recorded, {shown_wanted} asked"]


def _where_strings_differ(recorded: str, wanted: str, before: int = 20, limit: int = 60) -> tuple[str, str]:
    """Two long strings cut at the same 60 characters read alike when they differ further on: show each
    from a little before the first character where they part (the position said), not from their start."""
    same = next((i for i, (a, b) in enumerate(zip(recorded, wanted)) if a != b), min(len(recorded), len(wanted)))
    if max(len(json.dumps(recorded)), len(json.dumps(wanted))) <= limit or same < before:
        return _short(recorded, limit), _short(wanted, limit)
    start = same - before
    return tuple(f"...{_short(text[start:], limit)} (from character {start})"  # type: ignore[return-value]
                 for text in (recorded, wanted))


def nearest(method: str, params: dict[str, Any], entries: list[dict[str, Any]], limit: int = 3) -> list[dict[str, Any]]:
    """Recorded requests of the same method (and tool/prompt/uri target), fewest differences first."""
    target_key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    target = params.get(target_key) if target_key else None
    seen, scored = set(), []
    for entry in entries:
        if entry.get("method") != method:
            continue
        recorded = entry.get("params") or {}
        if target_key and recorded.get(target_key) != target:
            continue
        asked_args = params.get("arguments", {k: v for k, v in params.items() if k != "_meta"})
        recorded_args = recorded.get("arguments", {k: v for k, v in recorded.items() if k != "_meta"})
        signature = json.dumps(recorded_args, sort_keys=True, default=str)
        if signature in seen:
            continue
        seen.add(signature)
        diff = differences(asked_args, recorded_args)
        scored.append((len(diff), signature, {"arguments": recorded_args, "differences": diff}))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in scored[:limit]]


def describe_miss(server: str, method: str, params: dict[str, Any], near: list[dict[str, Any]], stateful: bool) -> str:
    what = params.get("name") or params.get("uri") or method
    text = f"replay miss: no recording of {method} {what!r} on server {server!r} with these arguments"
    if stateful:
        text += (" at this point of the run (calls to this server are keyed on the run's earlier state-changing "
                 "calls; none recorded after the same ones matches)")
    if not near:
        return text + "; nothing similar was recorded"
    # The recorded arguments whole (not cut at 60 characters): a value the differences do not name is readable too.
    lines = [f"{_short(n['arguments'], ARGUMENTS_SHOWN)} ({'; '.join(n['differences']) or 'same arguments, other history'})"
             for n in near]
    return text + "; nearest recorded: " + " | ".join(lines)
