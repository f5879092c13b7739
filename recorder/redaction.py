"""Secrets never reach cassette bytes: values of the env vars a server declares,
and configured regex patterns, are replaced in every string of a record."""

from __future__ import annotations

import re
from typing import Any

MASK = "«redacted»"


class Redactor:
    def __init__(self, secrets: list[str] | None = None, patterns: list[str] | None = None) -> None:
        literal = sorted({s for s in (secrets or []) if s and len(s) >= 4}, key=len, reverse=True)
        parts = [re.escape(s) for s in literal] + list(patterns or [])
        self._re = re.compile("|".join(parts)) if parts else None

    @property
    def active(self) -> bool:
        return self._re is not None

    def __call__(self, value: Any) -> Any:
        if self._re is None:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._re.sub(MASK, value) if self._re.search(value) else value
        if isinstance(value, dict):
            return {self._walk(k) if isinstance(k, str) else k: self._walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        return value
