"""One table of a report: what every renderer (terminal, Markdown, HTML) lays out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Section:
    title: str
    columns: list[tuple[str, str]]  # (header, kind)
    rows: list[list[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    key: str = ""
