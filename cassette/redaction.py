"""Secrets never reach cassette bytes: values of the env vars a server declares,
and configured regex patterns, are replaced in every string of a record.

A secret is masked whole, and so are the parts of it that carry it on their own: a
URL-shaped value (`postgres://user:PASSWORD@host/db`) is quoted in error texts and
tool answers by its password or its userinfo alone, so those are secrets too."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "«redacted»"


class Redactor:
    def __init__(self, secrets: list[str] | None = None, patterns: list[str] | None = None) -> None:
        whole = [s for s in (secrets or []) if s]
        literal = sorted({p for s in whole for p in (s, *secret_parts(s)) if len(p) >= 4}, key=len, reverse=True)
        parts = [re.escape(s) for s in literal] + list(patterns or [])
        self._re = re.compile("|".join(parts)) if parts else None

    @property
    def active(self) -> bool:
        return self._re is not None

    def __call__(self, value: Any) -> Any:
        if self._re is None:
            return value
        return self._walk(value, self._re)

    def _walk(self, value: Any, pattern: re.Pattern[str]) -> Any:
        if isinstance(value, str):
            return pattern.sub(MASK, value) if pattern.search(value) else value
        if isinstance(value, dict):
            return {
                self._walk(k, pattern) if isinstance(k, str) else k: self._walk(v, pattern) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._walk(v, pattern) for v in value]
        return value


def secret_parts(value: str) -> list[str]:
    """The pieces of a URL-shaped secret that carry it: the password (as written and decoded) and the
    userinfo. Anything else (host, path, user name alone) is not secret and is left readable."""
    if "://" not in value or "@" not in value:
        return []
    try:
        userinfo = urlsplit(value.strip()).netloc.rpartition("@")[0]
    except ValueError:
        return []
    _, colon, password = userinfo.partition(":")
    parts = [userinfo] if colon else []
    if password:
        parts += [password, unquote(password)]
    return parts
