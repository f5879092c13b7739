"""Numbered records (the call log, the runs): a record's number as its LMDB key, and the number written into a
record packed before its number was known (the store numbers records at commit; packing again would cost as much
as the first time)."""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from mcpgw.cassette.codec import pack

seq_key = struct.Struct(">Q").pack  # a record's number as its key: 8 bytes, big-endian (so keys sort as numbers)


class Packed(NamedTuple):
    """A record to append, and its bytes packed with "seq" None as its first field."""

    record: dict[str, Any]
    data: bytes


_SEQ_NONE = b"\xa3seq\xc0"  # msgpack: the key "seq", then nil


def with_seq(value: dict[str, Any] | Packed, seq: int) -> bytes:
    """`pack({**record, "seq": seq})`; for a `Packed` record, its bytes with the number written in (the same bytes:
    a map's header, then "seq" and its value, then the rest as packed), without packing it again."""
    if isinstance(value, Packed):
        data = value.data
        head = 1 if 0x80 <= data[0] <= 0x8F else 3 if data[0] == 0xDE else 5 if data[0] == 0xDF else 0
        if head and data[head : head + 5] == _SEQ_NONE:
            return b"".join((data[:head], _SEQ_NONE[:4], pack(seq), data[head + 5 :]))
        value = value.record
    return pack({**value, "seq": seq})
