"""MCP-AgentBench categories and pass rates.

Six categories: server scope (single / multi server) x call dependency
(single / parallel / sequential call). Category labels arrive spelled many
ways ("Single-Server-Parallel-Call", "multi_server_sequential", "ss-pc"...);
`normalize_category` maps them onto one spelling and leaves anything else as
given, so an unexpected label still shows up in the report.

Pass rate = passes / judged queries. A query whose judgement could not be
obtained or parsed (verdict None) is counted apart as `unjudged`, not as a
failure, so a flaky judge is visible instead of silently lowering the score.
The paper's "Avg." is the mean of the six category rates (`macro_pass_rate`);
with its balanced 100-per-category design it equals the overall rate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

SCOPES = ("single-server", "multi-server")
DEPENDENCIES = ("single-call", "parallel-call", "sequential-call")
CATEGORIES = tuple(f"{scope}/{dep}" for scope in SCOPES for dep in DEPENDENCIES)

_SCOPE_WORDS = {
    "single": "single-server",
    "ss": "single-server",
    "multi": "multi-server",
    "multiple": "multi-server",
    "ms": "multi-server",
}
_DEP_WORDS = {
    "single": "single-call",
    "sc": "single-call",
    "parallel": "parallel-call",
    "pc": "parallel-call",
    "sequential": "sequential-call",
    "seq": "sequential-call",
    "sequence": "sequential-call",
}


def normalize_category(label: str | None) -> str | None:
    if label is None:
        return None
    words = [w for w in re.split(r"[^a-z]+", label.lower()) if w and w not in ("server", "call", "calls", "servers")]
    if len(words) == 2 and words[0] in _SCOPE_WORDS and words[1] in _DEP_WORDS:
        return f"{_SCOPE_WORDS[words[0]]}/{_DEP_WORDS[words[1]]}"
    return label


def pass_rates(verdicts: Iterable[tuple[str | None, bool | None]]) -> dict[str, Any]:
    """verdicts: (category, passed) per query -> overall and per-category rates."""
    by_category: dict[str, dict[str, int]] = {}
    total = {"queries": 0, "passed": 0, "judged": 0, "unjudged": 0}
    for category, passed in verdicts:
        name = normalize_category(category) or "uncategorised"
        counts = by_category.setdefault(name, {"queries": 0, "passed": 0, "judged": 0, "unjudged": 0})
        for bucket in (counts, total):
            bucket["queries"] += 1
            if passed is None:
                bucket["unjudged"] += 1
            else:
                bucket["judged"] += 1
                bucket["passed"] += bool(passed)
    categories = {name: {**c, "pass_rate": _rate(c)} for name, c in _in_order(by_category)}
    known = [c["pass_rate"] for name, c in categories.items() if name in CATEGORIES and c["pass_rate"] is not None]
    return {
        **total,
        "pass_rate": _rate(total),
        "macro_pass_rate": sum(known) / len(known) if known else None,
        "categories": categories,
    }


def _rate(counts: Mapping[str, int]) -> float | None:
    return counts["passed"] / counts["judged"] if counts["judged"] else None


def _in_order(by_category: dict[str, dict[str, int]]) -> list[tuple[str, dict[str, int]]]:
    known = [(c, by_category[c]) for c in CATEGORIES if c in by_category]
    others = sorted((c, v) for c, v in by_category.items() if c not in CATEGORIES)
    return known + others
