"""Bounded label values for `/metrics`: a client's strings must not grow the exposition for the life of the process.

Each label set of a Prometheus counter lives until the process ends, so a label whose values come from clients
(the tool name a client sends, the model field of a model request) let one client grow /metrics without bound:
10,000 unknown tool names took it from 7.7 KB to 3 MB, five 1 MB model names to 13 MB. Here a label keeps at most
`limit` distinct values, each at most `MAX_CHARS` long, and only values the gateway vouches for (a tool of the
catalog; a model that was answered): anything else counts under one value, `OTHER` (unknown tools under `UNKNOWN`).
"""

from __future__ import annotations

MAX_CHARS = 200  # a longer value is not a name a dashboard wants: counted as OTHER
OTHER = "(other)"  # past the cap, too long, or never vouched for
UNKNOWN = "(unknown)"  # a tool name no server of the catalog has


class LabelValues:
    """The values one label has taken, at most `limit` of them."""

    __slots__ = ("limit", "seen")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()

    def value(self, name: str, vouched: bool = True) -> str:
        """`name` as the label's value: itself when already taken, or when vouched for and there is room; else OTHER."""
        if name in self.seen:
            return name
        if not vouched or len(name) > MAX_CHARS or len(self.seen) >= self.limit:
            return OTHER
        self.seen.add(name)
        return name
