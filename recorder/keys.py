"""Request keys: which recorded exchange answers a request.

key = digest(server, method, canonical params), where canonical params have
sorted keys and no volatile `_meta` (progress tokens, client identity, trace
ids: nothing in `_meta` names what is asked). JSON-RPC ids never reach here.
For a stateful server the key also chains the digest of the calls made to it
earlier in the session, so a different sequence is a miss, not a wrong answer.
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


def request_key(server: str, method: str, params: dict[str, Any] | None, history: str = "") -> str:
    text = f"{server}\n{method}\n{canonical(params)}\n{history}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def chain(history: str, key: str) -> str:
    """The history digest after one more call (stateful servers)."""
    return hashlib.blake2b(f"{history}>{key}".encode(), digest_size=16).hexdigest()
