"""Compare two MCP results the way a person would.

`isError` flips come first; content blocks are compared by position and type;
JSON inside text blocks is parsed and compared structurally (its paths read
`$.content[0].text:json.datetime`); `structuredContent` is compared
structurally. Volatile parts are declared, never guessed: ignore rules name
paths (with `*` for any key or index) and regexes for text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcpgw.gateway.specs.ignore_rules import IgnoreRule as IgnoreRule  # the rules are the lock's
from mcpgw.gateway.specs.ignore_rules import Rules as Rules
from mcpgw.gateway.specs.ignore_rules import parse_rules as parse_rules

JSON_MARK = ":json"


@dataclass(frozen=True)
class Difference:
    path: str
    recorded: Any
    live: Any

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "recorded": _short(self.recorded), "live": _short(self.live)}

    def describe(self) -> str:
        return f"{self.path}: {_short(self.recorded)} -> {_short(self.live)}"


def compare_results(
    recorded: dict[str, Any], live: dict[str, Any], rules: Rules | None = None
) -> tuple[list[Difference], list[Difference]]:
    """(all differences, differences that survive the ignore rules), `isError` first."""
    everything: list[Difference] = []
    if bool(recorded.get("isError")) != bool(live.get("isError")):
        everything.append(Difference("$.isError", bool(recorded.get("isError")), bool(live.get("isError"))))
    _diff_content(recorded.get("content") or [], live.get("content") or [], "$.content", everything)
    if "structuredContent" in recorded or "structuredContent" in live:
        _diff(recorded.get("structuredContent"), live.get("structuredContent"), "$.structuredContent", everything)
    for key in sorted((set(recorded) | set(live)) - {"content", "structuredContent", "isError", "_meta"}):
        _diff(recorded.get(key), live.get(key), f"$.{key}", everything)
    if rules is None:
        return everything, everything
    remaining = []
    for difference in everything:
        if rules.ignores(difference.path):
            continue
        if isinstance(difference.recorded, str) and isinstance(difference.live, str) and rules.text:
            if rules.scrub(difference.recorded) == rules.scrub(difference.live):
                continue
        remaining.append(difference)
    return everything, remaining


def _diff_content(recorded: list[Any], live: list[Any], path: str, out: list[Difference]) -> None:
    for index in range(max(len(recorded), len(live))):
        here = f"{path}[{index}]"
        if index >= len(recorded) or index >= len(live):
            out.append(
                Difference(
                    here, recorded[index] if index < len(recorded) else None, live[index] if index < len(live) else None
                )
            )
            continue
        a, b = recorded[index], live[index]
        if not isinstance(a, dict) or not isinstance(b, dict) or a.get("type") != b.get("type"):
            out.append(Difference(f"{here}.type", _type(a), _type(b)))
            continue
        for key in sorted(set(a) | set(b)):
            if key == "text" and isinstance(a.get("text"), str) and isinstance(b.get("text"), str):
                _diff_text(a["text"], b["text"], f"{here}.text", out)
            else:
                _diff(a.get(key), b.get(key), f"{here}.{key}", out)


def _diff_text(a: str, b: str, path: str, out: list[Difference]) -> None:
    if a == b:
        return
    parsed_a, parsed_b = _as_json(a), _as_json(b)
    if parsed_a is not None and parsed_b is not None:
        _diff(parsed_a, parsed_b, path + JSON_MARK, out)
    else:
        out.append(Difference(path, a, b))


def _diff(a: Any, b: Any, path: str, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _diff(a.get(key), b.get(key), f"{path}.{key}", out)
    elif isinstance(a, list) and isinstance(b, list):
        for index in range(max(len(a), len(b))):
            _diff(a[index] if index < len(a) else None, b[index] if index < len(b) else None, f"{path}[{index}]", out)
    elif isinstance(a, str) and isinstance(b, str):
        _diff_text(a, b, path, out)  # JSON inside a string is compared structurally too
    elif a != b or isinstance(a, bool) != isinstance(b, bool):
        out.append(Difference(path, a, b))


def _as_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _type(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else type(block).__name__


def _short(value: Any, limit: int = 120) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 3] + "..."
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return text if len(text) <= limit else text[: limit - 3] + "..."
    return value


def propose_rules(differences: list[Difference]) -> dict[str, list[str]]:
    """Ignore rules that would make two live answers to the same call equal (for --learn)."""
    paths = sorted({d.path for d in differences})
    return {"paths": paths}
