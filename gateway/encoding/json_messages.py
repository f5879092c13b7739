"""What a JSON-RPC message may be, over HTTP and stdio alike: strict JSON (no lone surrogates, no
`NaN`/`Infinity`, no overflowing numbers), nested at most MAX_DEPTH deep, with an id that is a string
or an integer. Each problem is one line."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

MAX_DEPTH = 64  # JSON nesting allowed in a request; tool arguments need far less


def parse_message(body: bytes) -> tuple[Any, tuple[int, int, str] | None]:
    """One JSON-RPC message, or why not: (HTTP status, JSON-RPC code, one line). Also used over stdio."""
    message, problem = parse_json(body)
    if problem is not None:
        return None, (400, -32700, f"Parse error: {problem}")
    shape = _shape_problem(message)
    if shape is not None:
        return None, (400, shape[0], shape[1])
    return message, None


def parse_json(body: bytes) -> tuple[Any, str | None]:
    """Standard JSON a gateway can pass on and store, or why not (one line, for -32700 or an OpenAI error).

    Python's parser takes more than RFC 8259 does: `NaN` and `Infinity` (a Node upstream cannot parse
    them, and enforce's range checks let NaN through), numbers that overflow to infinity, and `\\ud800`
    escapes that decode to a lone surrogate (no UTF-8 encoding exists for it, so it could be neither
    forwarded nor logged). Each is refused here, at the edge, for every transport."""
    try:
        value = _loads(body)
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    except _NotStandard as exc:
        return None, str(exc)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, str(exc)
    # Nesting needs a bracket per level: a body with few brackets (any usual request) needs no walk.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and _depth_over(value, MAX_DEPTH):
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    # A surrogate escape is rare; only then is the value re-encoded to find a lone one.
    if _SURROGATE_ESCAPE.search(body) is not None and not _encodable(value):
        return None, "a string holds a lone surrogate escape (\\ud800-\\udfff without its pair), which is not Unicode"
    return value, None


def _loads(body: Any) -> Any:
    """`json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)`, with its decoder made once
    (json.loads builds one per call when given hooks: half of a small message's parse)."""
    if isinstance(body, (bytes, bytearray)):
        if body[:1] == b"{" and body[1:2] != b"\x00":  # an object in UTF-8 (json.detect_encoding's verdict, sooner)
            text = body.decode("utf-8", "surrogatepass")
            try:  # JSONDecoder.decode without its two Python frames and whitespace matches
                value, end = _SCAN(text, 0)
                if end == len(text):
                    return value
            except StopIteration:  # no value where one was due
                pass
            return _DECODER.decode(text)  # the decoder's own verdict: its words for what is missing or follows
        encoding = json.detect_encoding(body)
        if encoding not in _UTF8:  # a peer behind us reads UTF-8 only, as RFC 8259 asks of networked JSON
            raise _NotStandard(f"JSON in {encoding.upper()}: send it in UTF-8")
        return _DECODER.decode(body.decode(encoding, "surrogatepass"))
    return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)


BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark: RFC 8259 lets a parser ignore it, and we do
_UTF8 = ("utf-8", "utf-8-sig")


class _NotStandard(ValueError):
    pass


# An escape, or its raw bytes (json.loads decodes bytes with "surrogatepass", so those pass too).
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _refuse_constant(name: str) -> Any:
    raise _NotStandard(f"{name} is not a JSON number (RFC 8259); send a finite number or a string")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotStandard(f"the number {text[:40]} overflows a double; send a finite number or a string")
    return value


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shape_problem(message: Any) -> tuple[int, str] | None:
    """Why `message` is not one JSON-RPC message, in one line (the SDK's answer would be a
    multi-line pydantic report under "Invalid params")."""
    if isinstance(message, list):
        return -32600, "Invalid Request: JSON-RPC batches are not supported; send one message per request"
    if not isinstance(message, dict):
        return -32600, f"Invalid Request: a JSON-RPC message is an object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return -32600, f'Invalid Request: "jsonrpc" must be "2.0", not {json.dumps(message.get("jsonrpc"))[:40]}'
    if "id" in message and not valid_id(message["id"]) and ("method" in message or message["id"] is not None):
        return -32600, f"Invalid Request: id must be a string or an integer, not {json.dumps(message['id'])[:40]}"
    if "method" in message:
        if not isinstance(message["method"], str):
            return -32600, f'Invalid Request: "method" must be a string, not {json.dumps(message["method"])[:40]}'
        if message.get("params") is not None and not isinstance(message["params"], dict):
            return -32602, f'Invalid params: "params" must be an object, not {json.dumps(message["params"])[:40]}'
        return None
    if "id" in message and ("result" in message) != ("error" in message):
        return None  # the client's answer to a server request
    return -32600, 'Invalid Request: neither a request ("method") nor a response ("id" with "result" or "error")'


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _depth_over(value: Any, limit: int) -> bool:
    """Iterative, so a deep value cannot exhaust the interpreter's stack here."""
    stack = [(value, 1)]
    children: Iterable[Any]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__; typeshed omits it
