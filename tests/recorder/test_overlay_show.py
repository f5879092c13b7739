"""`cassette show` of an overlay says, in a whole sentence, what the overlay holds (answers made live or simulated)."""

from __future__ import annotations

import os
import subprocess
import sys

from mcpgw.cassette.cassette import Cassette
from tests.conftest import ROOT


def show(cassettes, name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "cassette", "show", name, "--cassettes-dir", str(cassettes)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def answer(key: str, source: str) -> dict:
    return {
        "key": key,
        "base": key,
        "history": "",
        "server": "s",
        "method": "tools/call",
        "source": source,
        "params": {"name": "t", "arguments": {"k": key}},
        "result": {"content": [], "isError": False},
    }


def test_an_overlay_says_what_it_holds_empty_or_not(tmp_path):
    cassettes = tmp_path / "cassettes"
    Cassette(cassettes / "A").close()
    overlay = Cassette(cassettes / "O")
    overlay.store.put("meta", b"info", {"created": 1.0, "servers": {}, "overlay_of": {"name": "A", "created": 1.0}})
    overlay.close()
    assert "an overlay over cassette 'A', holding no tool answers yet\n" in show(cassettes, "O")

    overlay = Cassette(cassettes / "O")
    overlay.record_exchange(answer("k1", "simulated"), wait=False)
    overlay.close()
    assert "an overlay over cassette 'A', holding 1 tool answer (1 simulated)\n" in show(cassettes, "O")

    overlay = Cassette(cassettes / "O")
    for key, source in (("k2", "simulated"), ("k3", "live")):
        overlay.record_exchange(answer(key, source), wait=False)
    overlay.close()
    assert "an overlay over cassette 'A', holding 3 tool answers (2 simulated, 1 live)\n" in show(cassettes, "O")
