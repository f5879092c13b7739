"""Comparing recorded and replayed observations, as a client of each protocol era is meant to see them."""

from __future__ import annotations

import json
from typing import Any


def first_difference(a: Any, b: Any, path: str = "$") -> str:
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'recorded' if key in a else 'replayed'}"
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {json.dumps(a)[:120]} vs {json.dumps(b)[:120]}"


def era_view(observation: dict[str, Any], era: str) -> dict[str, Any]:
    """What a client of `era` is meant to see of an answer recorded in the handshake era.
    2026-07-28 removed Tool.execution (task support; mcp_types: "2025-11-25 only; removed in
    2026-07-28"), so the SDK leaves it out of tools/list for such clients."""
    if era != "2026-07-28" or observation["step"] != "list_tools" or "result" not in observation:
        return observation
    return {**observation, "result": [{k: v for k, v in t.items() if k != "execution"} for t in observation["result"]]}


def compare(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]], era: str) -> list[str]:
    problems = []
    for rec, rep in zip((era_view(o, era) for o in recorded), replayed, strict=False):
        if rec != rep:
            problems.append(f"[{era}] {rec['step']}: {first_difference(rec, rep)}")
    if len(recorded) != len(replayed):
        problems.append(f"[{era}] {len(recorded)} recorded observations, {len(replayed)} replayed")
    return problems
