"""A tool result's digest, as the call log's `result_digest` holds it: what drift and audits compare."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mcpgw.gateway.encoding.msgpack_packer import packb


def result_digest(result: dict[str, Any]) -> str:
    try:
        data = packb(result)  # as msgpack.packb(result, use_bin_type=True), with a packer kept per thread
    except OverflowError:  # an integer beyond 64 bits (valid JSON)
        data = json.dumps(result, sort_keys=True, default=str).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()
