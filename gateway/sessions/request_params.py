"""What the SDK refuses as malformed params of a spec request (-32602 "Invalid request parameters"), asked
before it would: by the fast path (which skips the SDK's check for params it recognises at a glance), by the
sessionless per-server calls (which the SDK never sees) and by session admission (an initialize it would
refuse after minting a session for it)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp_types import methods as _methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

INVALID_PARAMS = {"code": types.INVALID_PARAMS, "message": "Invalid request parameters", "data": ""}  # the SDK's words
_GLANCED = frozenset({"tools/call", "tools/list", "ping"})  # what `plainly_valid` knows
_CALL_KEYS = frozenset({"name", "arguments"})


def plainly_valid(method: str, params: Any) -> bool:
    """Params of a hot request (tools/call, tools/list, ping) the SDK's request validation accepts at every
    handshake version, seen at a glance (its pydantic pass costs 15 us a call); False: ask the SDK.
    tests/gateway/test_fast_path_checks.py holds the installed SDK to it."""
    if method == "tools/call":
        return (
            isinstance(params, dict)
            and params.keys() <= _CALL_KEYS
            and isinstance(params.get("name"), str)
            and isinstance(params.get("arguments", {}), dict)
        )
    return method in _GLANCED and (params is None or params == {})


def params_problem(method: str, version: str | None, params: Any) -> str | None:
    """Why the SDK would refuse these params, in one line; None when it takes them. `version`: the request's
    protocol version (a sessionless request may have none: the latest handshake version's rules then)."""
    if plainly_valid(method, params):
        return None
    try:
        _methods.validate_client_request(
            method, version if version in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION, params
        )
    except ValidationError as exc:
        return describe_invalid(exc)
    except (KeyError, ValueError) as exc:
        return str(exc)
    return None


def describe_invalid(exc: ValidationError) -> str:
    """A pydantic refusal of a request's params in one line: `params.arguments: Input should be a valid dictionary`."""
    return "; ".join(f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()[:3])
