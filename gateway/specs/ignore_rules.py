"""Drift ignore rules as a lock entry declares them: which result paths and text may differ.

They belong to the lock format (the config checks them at load time); replay's
comparison (`replay.compare`) applies them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class IgnoreRule:
    tool: str = "*"
    paths: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def applies_to(self, tool: str) -> bool:
        return self.tool in ("*", tool)


@dataclass
class Rules:
    paths: list[re.Pattern[str]] = field(default_factory=list)
    text: list[re.Pattern[str]] = field(default_factory=list)

    @classmethod
    def for_tool(cls, rules: list[IgnoreRule], tool: str) -> Rules:
        chosen = [r for r in rules if r.applies_to(tool)]
        return cls([_path_pattern(p) for r in chosen for p in r.paths], [re.compile(t) for r in chosen for t in r.text])

    def ignores(self, path: str) -> bool:
        return any(p.fullmatch(path) for p in self.paths)

    def scrub(self, text: str) -> str:
        for pattern in self.text:
            text = pattern.sub("<ignored>", text)
        return text


def _path_pattern(path: str) -> re.Pattern[str]:
    escaped = re.escape(path)
    escaped = escaped.replace(r"\[\*\]", r"\[\d+\]").replace(r"\*", r"[^.\[\]]*")
    return re.compile(escaped + r"(?::json)?(?:[.\[].*)?")  # a rule on a path covers everything below it


def parse_rules(raw: Any, where: str = "ignore") -> list[IgnoreRule]:
    """Ignore rules from a lock entry's `ignore:` list; a clear ValueError on a bad one."""
    rules = []
    for i, item in enumerate(raw or []):
        if not isinstance(item, dict):
            raise ValueError(f"{where}[{i}]: expected a mapping with tool, paths and/or text")
        unknown = set(item) - {"tool", "paths", "text"}
        if unknown:
            raise ValueError(f"{where}[{i}]: unknown key(s) {sorted(unknown)}")
        rule = IgnoreRule(
            str(item.get("tool", "*")),
            [str(p) for p in item.get("paths") or []],
            [str(t) for t in item.get("text") or []],
        )
        for pattern in rule.text:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{where}[{i}]: bad regex {pattern!r}: {exc}") from None
        rules.append(rule)
    return rules
