"""What a strategy hands back, and the small pieces every strategy shares."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class Outcome:
    final_answer: str
    rounds: int
    status: str  # ok | max_rounds


def describe_tools(tools: list[dict[str, Any]]) -> str:
    """Tools as text, for strategies whose model reads them in the prompt rather than as `tools`."""
    lines = []
    for tool in tools:
        schema = json.dumps(tool.get("inputSchema") or {}, ensure_ascii=False, sort_keys=True)
        lines.append(f"- {tool['name']}: {(tool.get('description') or '').strip()[:400]}\n  parameters: {schema}")
    return "\n".join(lines) or "(no tools)"


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... [{len(text) - limit} characters cut]"
