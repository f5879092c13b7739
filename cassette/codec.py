"""msgpack encoding for cassette values (exact round trip of JSON-shaped data)."""

from __future__ import annotations

from typing import Any

import msgpack

from mcpgw.gateway.encoding.msgpack_packer import packb


def pack(value: Any) -> bytes:
    try:
        return packb(value)  # one packer per thread, reused (gateway.encoding.msgpack_packer)
    except OverflowError:  # an integer beyond 64 bits (valid JSON): kept exactly, as its decimal text
        return packb(_big_ints_as_text(value))


def _big_ints_as_text(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value)
    if isinstance(value, dict):
        return {k: _big_ints_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_big_ints_as_text(v) for v in value]
    return value


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)
