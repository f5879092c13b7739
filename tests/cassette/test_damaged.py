"""Issue 13, item 5: a damaged cassette is refused in one line naming the file and the damage.

Damage is made the way it happens: a copy cut short (a full disk, an interrupted
copy), pages scribbled over, a file of zeros. The commands run as users run them.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

DEFAULT = ROOT / "cassettes" / "default"


def damaged(folder: Path, how: str) -> Path:
    target = folder / how
    shutil.copytree(DEFAULT, target)
    data = target / "data.mdb"
    if how == "truncated":
        os.truncate(data, data.stat().st_size // 2)
    elif how == "scribbled":
        raw = bytearray(data.read_bytes())
        rng = random.Random(13)
        for page in range(2, len(raw) // 4096):
            offset = page * 4096 + rng.randrange(16, 4000)
            raw[offset : offset + 64] = bytes(rng.randrange(256) for _ in range(64))
        data.write_bytes(bytes(raw))
    elif how == "zeros":
        data.write_bytes(b"\0" * 100)
    elif how == "empty":  # a copy that failed at once
        data.write_bytes(b"")
    return target


def mcpgw(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def assert_refused(result: subprocess.CompletedProcess, path: Path, damage: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])  # never SIGBUS (-7) or a traceback (1)
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"mcpgw: {path / 'data.mdb'}: damaged") and damage in line, result.stderr[-500:]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "how,damage",
    [
        ("truncated", "truncated to"),
        ("scribbled", "damaged"),
        ("zeros", "not an LMDB file"),
        ("empty", "empty (0 bytes)"),
    ],
)
def test_show_export_replay_and_record_refuse_a_damaged_cassette(tmp_path, how, damage):
    folder = tmp_path / "cassettes"
    path = damaged(folder, how)
    assert_refused(mcpgw("cassette", "--cassettes-dir", str(folder), "show", how), path, damage)
    assert_refused(mcpgw("cassette", "--cassettes-dir", str(folder), "export", how), path, damage)
    assert_refused(mcpgw("calls", "export", how, "--cassettes-dir", str(folder)), path, damage)
    assert_refused(
        mcpgw(
            "serve", "--mode", "replay", "--cassettes-dir", str(folder), "--cassette", how, "--port", str(free_port())
        ),
        path,
        damage,
    )
    if how in ("truncated", "zeros"):  # scribbled pages are found when read; the header of a short file at once
        # (an empty data.mdb is a new cassette to a recorder, as an absent one is)
        config = tmp_path / "c.yaml"
        config.write_text("version: 1\nservers:\n  x:\n    command: /nonexistent\n")
        assert_refused(
            mcpgw(
                "serve",
                "--mode",
                "record",
                "--config",
                str(config),
                "--cassettes-dir",
                str(folder),
                "--cassette",
                how,
                "--port",
                str(free_port()),
            ),
            path,
            damage,
        )


def test_ls_lists_the_good_ones_and_marks_the_damaged(tmp_path):
    folder = tmp_path / "cassettes"
    shutil.copytree(DEFAULT, folder / "good")
    for how in ("truncated", "scribbled"):
        damaged(folder, how)
    result = mcpgw("cassette", "--cassettes-dir", str(folder), "ls")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    flat = " ".join(result.stdout.split())
    assert "good" in flat and "unreadable" in flat
    rows = [line for line in result.stdout.splitlines() if "good" in line]
    assert rows and "unreadable" not in rows[0]
    shown = mcpgw("cassette", "--cassettes-dir", str(folder), "show", "good")  # other cassettes' damage is not its
    assert shown.returncode == 0, shown.stderr
