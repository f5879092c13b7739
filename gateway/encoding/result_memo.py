"""Results that are the same object on every call that gets them (a recording's, replayed): what is derived from
one - its digest for the call log, its answer's JSON - is made once, by whoever needs it first.

The replaying upstream marks the results it hands out (`ResultMemo.mark`); anyone looks a result up by identity
(`known`). An upstream's table holds its entries, and the process-wide index only weak references to them, so they
go when the upstream goes; while an entry lives it holds its result, so no other object can have that id. A marked
result must never be changed (nothing changes a recorded answer: it is answered as recorded).
"""

from __future__ import annotations

import weakref
from typing import Any

from mcpgw.gateway.encoding.result_digest import result_digest


class Stable:
    __slots__ = ("result", "digest", "plain_text", "__weakref__")

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self.digest = result_digest(result)
        self.plain_text: bytes | None = (
            None  # its answer's JSON in the plain shape, once made (gateway.endpoints.fast_path)
        )


_INDEX: dict[int, weakref.ref[Stable]] = {}


class ResultMemo:
    """One upstream's marked results."""

    def __init__(self) -> None:
        self._held: dict[int, Stable] = {}

    def mark(self, result: dict[str, Any]) -> Stable:
        stable = self._held.get(id(result))
        if stable is None or stable.result is not result:
            key = id(result)
            stable = self._held[key] = Stable(result)

            def forget(ref: weakref.ref[Stable], key: int = key) -> None:
                if _INDEX.get(key) is ref:
                    _INDEX.pop(key)

            _INDEX[key] = weakref.ref(stable, forget)
        return stable


def known(result: Any) -> Stable | None:
    """The entry of a marked result, or None."""
    ref = _INDEX.get(id(result))
    stable = ref() if ref is not None else None
    return stable if stable is not None and stable.result is result else None
