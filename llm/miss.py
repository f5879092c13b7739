"""A model replay miss says what differs: the nearest recorded request (same run
first) and the first message, or the first other field, that is not the same."""

from __future__ import annotations

import json
from typing import Any


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return _short(message)
    parts = [str(message.get("role"))]
    if message.get("content") not in (None, ""):
        parts.append(_short(message["content"]))
    if message.get("tool_calls"):
        calls = [f"{(c.get('function') or {}).get('name')}({_short((c.get('function') or {}).get('arguments'), 40)})"
                 for c in message["tool_calls"] if isinstance(c, dict)]
        parts.append("tool calls " + ", ".join(calls))
    return " ".join(parts)


def _where_texts_part(recorded: str, asked: str, around: int = 60) -> str:
    """The first differing character's offset and both texts around it: long prompts
    (40-85k characters) agree for thousands of characters before they differ."""
    offset = next((i for i, (a, b) in enumerate(zip(recorded, asked)) if a != b), min(len(recorded), len(asked)))
    start = max(0, offset - around)

    def excerpt(text: str) -> str:
        part = text[start:offset + around]
        return ("..." if start else "") + part + ("..." if offset + around < len(text) else "")

    return (f"first difference at character {offset} (of {len(recorded)} recorded, {len(asked)} asked): "
            f"recorded {excerpt(recorded)!r}, asked {excerpt(asked)!r}")


def _message_difference(recorded: Any, asked: Any) -> str:
    if isinstance(recorded, dict) and isinstance(asked, dict) and recorded.get("role") == asked.get("role"):
        mine, theirs = asked.get("content"), recorded.get("content")
        if isinstance(mine, str) and isinstance(theirs, str) and mine != theirs:
            return f"{asked.get('role')} content, " + _where_texts_part(theirs, mine)
    return f"recorded {_message_text(recorded)!r}, asked {_message_text(asked)!r}"


def first_difference(asked: dict[str, Any], recorded: dict[str, Any]) -> tuple[int, str]:
    """(messages in common, a phrase saying what differs first)."""
    asked_msgs = asked.get("messages") if isinstance(asked.get("messages"), list) else []
    recorded_msgs = recorded.get("messages") if isinstance(recorded.get("messages"), list) else []
    common = 0
    for mine, theirs in zip(asked_msgs, recorded_msgs):
        if mine != theirs:
            break
        common += 1
    if common < min(len(asked_msgs), len(recorded_msgs)):
        return common, f"message {common + 1} differs: {_message_difference(recorded_msgs[common], asked_msgs[common])}"
    if len(asked_msgs) != len(recorded_msgs):
        return common, f"{len(asked_msgs)} messages asked, {len(recorded_msgs)} recorded (the first {common} agree)"
    for key in sorted(set(asked) | set(recorded)):
        if key == "messages" or asked.get(key) == recorded.get(key):
            continue
        if key not in recorded:
            return common, f"{key}={_short(asked[key], 40)} was not in the recording"
        if key not in asked:
            return common, f"{key}={_short(recorded[key], 40)} recorded but not asked"
        return common, f"{key}: recorded {_short(recorded[key], 40)}, asked {_short(asked[key], 40)}"
    return common, "same request, asked more often than recorded"


def describe_model_miss(path: str, body: dict[str, Any], lane: str, entries: list[dict[str, Any]]) -> str:
    text = f"model replay miss in run {lane!r}: no recorded answer to this {path} request"
    if not entries:
        return text + "; the cassette holds no model exchanges (was it recorded with --llm-base-url?)"
    best = None
    for position, entry in enumerate(entries):
        if entry.get("method") != path:
            continue
        common, phrase = first_difference(body, entry.get("params") or {})
        recorded_msgs = (entry.get("params") or {}).get("messages") or []
        length_gap = abs(len(body.get("messages") or []) - len(recorded_msgs))
        score = (entry.get("lane") == lane, common, -length_gap, -position)
        if best is None or score > best[0]:
            best = (score, entry, phrase)
    if best is None:
        return text + f"; no {path} request was recorded"
    _, entry, phrase = best
    where = "in this run" if entry.get("lane") == lane else f"in run {entry.get('lane')!r}"
    return f"{text}; nearest recorded {where}: {phrase}"
