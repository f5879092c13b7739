"""msgpack encoding for cassette values (exact round trip of JSON-shaped data)."""

from __future__ import annotations

from typing import Any

import msgpack

_packer_options = {"use_bin_type": True}


def pack(value: Any) -> bytes:
    return msgpack.packb(value, **_packer_options)


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)
