"""gateway.encoding.json_messages reads a body as json.loads would with its hooks: the quick road for a UTF-8 object gives
the same value, or the same one-line refusal, as detect_encoding + JSONDecoder.decode, on generated and mutated bodies."""

from __future__ import annotations

import json
import random

import pytest

from mcpgw.gateway.encoding.json_messages import _DECODER, MAX_DEPTH, parse_json


def _reference(body: bytes):
    """What parse_json gave before its quick road: the encoding detected, then the whole decoder."""
    try:
        encoding = json.detect_encoding(body)
        if encoding not in ("utf-8", "utf-8-sig"):
            return ("refused", f"JSON in {encoding.upper()}")
        return ("value", _DECODER.decode(body.decode(encoding, "surrogatepass")))
    except (ValueError, UnicodeDecodeError) as exc:
        return ("refused", str(exc))


def _outcome(body: bytes):
    value, problem = parse_json(body)
    return ("value", value) if problem is None else ("refused", problem)


def _bodies(rng: random.Random):
    message = {
        "jsonrpc": "2.0",
        "id": rng.randint(0, 99),
        "method": "tools/call",
        "params": {"name": "up__echo", "arguments": {"message": "é\u2028😀" * rng.randint(0, 3), "n": rng.random()}},
    }
    text = json.dumps(message, ensure_ascii=rng.random() < 0.5).encode()
    yield text
    yield text + b" \n\t"  # whitespace after: allowed
    yield text + b" x"  # extra data
    yield text + b"{}"  # a second object
    yield text[: rng.randint(1, len(text) - 1)]  # cut short
    at = rng.randint(1, len(text) - 1)
    yield text[:at] + bytes([rng.randint(0, 255)]) + text[at + 1 :]  # one byte changed
    yield text[:at] + rng.choice([b"NaN", b"1e999", b"\\ud800", b"\x00", b"\xff", b",", b"}"]) + text[at:]
    yield b"{" + b"\x00" * rng.randint(0, 3) + text[1:]  # what detect_encoding reads as UTF-16/32
    yield text.decode().encode(rng.choice(["utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"]))


@pytest.mark.parametrize("seed", range(4))
def test_a_body_is_read_as_the_whole_decoder_reads_it(seed):
    rng = random.Random(seed)
    for _ in range(300):
        for body in _bodies(rng):
            expected = _reference(body)
            got = _outcome(body)
            if expected[0] == "refused":
                assert got[0] == "refused", body
                assert expected[1] in got[1] or got[1] in expected[1] or "surrogate" in got[1], (body, expected, got)
            else:
                assert got[0] == "value" or "surrogate" in got[1] or "overflows" in got[1], (body, got)
                if got[0] == "value":
                    assert got[1] == expected[1] and type(got[1]) is type(expected[1]), body


def test_a_deep_or_trailing_object_is_still_refused_on_the_quick_road():
    assert parse_json(b'{"a":1}  ')[1] is None
    assert "Extra data" in parse_json(b'{"a":1} {"b":2}')[1]
    assert "nested deeper" in parse_json(b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1))[1]
    assert "not a JSON number" in parse_json(b'{"a":NaN}')[1]
