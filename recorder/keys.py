"""Request keys: which recorded exchange answers a request.

base = digest(server, method, canonical params), where canonical params have
sorted keys and no volatile `_meta` (progress tokens, client identity, trace
ids: nothing in `_meta` names what is asked). JSON-RPC ids never reach here.

key = base, or, once a lane has made state-changing calls to the server,
digest(base @ history), where history chains the bases of those calls in
order (see `recorder.state`). So the same read at another state of the server
is another request, and a diverging sequence is a miss, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical(params: dict[str, Any] | None) -> str:
    clean = {k: _number(v) for k, v in (params or {}).items() if k != "_meta"}
    return json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _number(value: Any) -> Any:
    """JSON does not tell 1 from 1.0; neither do keys."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
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


def request_key(server: str, method: str, params: dict[str, Any] | None, history: str = "") -> str:
    return with_history(base_key(server, method, params), history)


def chain(history: str, base: str) -> str:
    """The history digest after one more state-changing call."""
    return _digest(f"{history}>{base}")
