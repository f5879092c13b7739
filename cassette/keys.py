"""Request keys: which recorded exchange answers a request.

base = digest(server, method, canonical params), where canonical params have
sorted keys and no volatile `_meta` (progress tokens, client identity, trace
ids: nothing in `_meta` names what is asked). JSON-RPC ids never reach here.

key = base, or, once a lane has made state-changing calls to the server,
digest(base @ history), where history chains the bases of those calls in
order (see `cassette.state`). So the same read at another state of the server
is another request, and a diverging sequence is a miss, never a wrong answer.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mcpgw.gateway.encoding.json_text import canonical as canonical_json


def canonical(params: dict[str, Any] | None) -> str:
    clean = {k: v if type(v) in _LEAVES else _number(v) for k, v in (params or {}).items() if k != "_meta"}
    return canonical_json(
        clean
    )  # json.dumps(clean, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=str)


_LEAVES = frozenset({str, int, bool, type(None)})  # what _number returns unchanged, without a call


def _number(value: Any) -> Any:
    """JSON does not tell 1 from 1.0; neither do keys. (Leaves are skipped in the comprehensions
    rather than visited: a chat request of 150 KB is mostly strings, and a call per string was
    most of its key's cost.)"""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _LEAVES else _number(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _LEAVES else _number(v) for v in value]
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):  # subclasses: the same, by the slower road
        return {k: _number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_number(v) for v in value]
    return value


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def base_key(server: str, method: str, params: dict[str, Any] | None) -> str:
    """What is asked, whatever the state: the key of a call with no history."""
    return _digest(f"{server}\n{method}\n{canonical(params)}\n")


def with_history(base: str, history: str) -> str:
    return _digest(f"{base}@{history}") if history else base


def chain(history: str, base: str) -> str:
    """The history digest after one more state-changing call."""
    return _digest(f"{history}>{base}")
