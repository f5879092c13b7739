"""The encoders made once (gateway.encoding.json_text) write what json.dumps writes with the same options."""

from __future__ import annotations

import json
import math
import random

import pytest

from mcpgw.gateway.encoding.json_text import canonical, compact


def _value(rng: random.Random, depth: int = 0):
    kinds = ["int", "float", "str", "bool", "none", "big"] + (["dict", "list"] * 2 if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-(2**40), 2**40)
    if kind == "big":
        return rng.choice([2**64 + 1, -(2**70), 10**30])
    if kind == "float":
        return rng.choice(
            [0.1, 1e16, 1e-7, -0.0, 2.5, 1.0, math.nan, math.inf, -math.inf, rng.random() * 10 ** rng.randint(-20, 20)]
        )
    if kind == "str":
        return "".join(
            rng.choice(["a", "é", "\u2028", "\n", '"', "\\", "\x00", "😀", "\ud800", "/", " "])
            for _ in range(rng.randint(0, 8))
        )
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {
        rng.choice(["b", "a", "é", "", "key", "Z", "_meta"]) + str(rng.randint(0, 3)): _value(rng, depth + 1)
        for _ in range(rng.randint(0, 4))
    }


@pytest.mark.parametrize("seed", range(5))
def test_they_write_what_json_dumps_writes(seed):
    rng = random.Random(seed)
    for _ in range(400):
        value = _value(rng)
        assert compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert canonical(value) == json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )


def test_keys_that_are_not_strings_and_values_json_cannot_write():
    mixed = {1: "one", False: "f", None: "n", 2.5: "x"}
    assert compact(mixed) == json.dumps(mixed, ensure_ascii=False, separators=(",", ":"))
    odd = {"when": object.__new__(type("Stamp", (), {"__str__": lambda self: "now"})), "set": {1}}
    assert canonical(odd) == json.dumps(odd, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    with pytest.raises(TypeError, match="not JSON serializable"):
        compact({"x": object()})
    with pytest.raises(TypeError):  # keys json cannot order
        canonical({1: "a", "b": 2})
    assert compact("plain") == '"plain"' and canonical(7) == "7"
