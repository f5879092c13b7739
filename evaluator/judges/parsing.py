"""Getting structured answers out of a judge's free text.

Judges are asked for one JSON object, but answer with code fences, prose
around the object, or trailing commas. `extract_object` finds the first
balanced {...} that parses (also after removing trailing commas); None when
there is none, which callers report as "unparseable" rather than guessing.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_PASS_WORDS = {
    "pass": True,
    "passed": True,
    "yes": True,
    "true": True,
    "success": True,
    "correct": True,
    "fail": False,
    "failed": False,
    "no": False,
    "false": False,
    "failure": False,
    "incorrect": False,
}
_VERDICT_KEYS = ("verdict", "result", "judgment", "judgement", "decision", "outcome", "pass", "passed")
_LAST_WORD = re.compile(r"\b(pass(?:ed)?|fail(?:ed)?)\b", re.IGNORECASE)


def _balanced_spans(text: str) -> list[str]:
    spans, depth, start, in_string, escaped = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def extract_object(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    for span in _balanced_spans(text):
        for candidate in (span, _TRAILING_COMMA.sub(r"\1", span)):
            try:
                value = json.loads(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def as_pass(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _PASS_WORDS.get(value.strip().strip(".!").lower())
    return None


def parse_pass_fail(text: str | None) -> tuple[bool | None, str]:
    """(verdict, reason). JSON first; otherwise the last standalone PASS/FAIL word, which is
    how free-form originals (a user's --judge-prompt) usually end."""
    obj = extract_object(text)
    if obj is not None:
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for key in _VERDICT_KEYS:
            if key in lowered:
                verdict = as_pass(lowered[key])
                if verdict is not None:
                    reason = lowered.get("reasoning") or lowered.get("reason") or lowered.get("explanation") or ""
                    return verdict, str(reason)
    words = _LAST_WORD.findall(text or "")
    if words:
        return words[-1].lower().startswith("pass"), (text or "").strip()[:500]
    return None, "unparseable judge answer"


def number_in(obj: dict[str, Any], key: str, low: float, high: float) -> float | None:
    """A numeric field within [low, high]; numeric strings are accepted, anything else is None."""
    value = obj.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, float)) and low <= value <= high:
        return float(value)
    return None
