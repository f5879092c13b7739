"""Issue 13, item 8: cassette operations stay inside the cassettes folder, and only cassettes are removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgw.cli import main
from tests.conftest import ROOT, free_port, misbehaving_entry

DEFAULT = ROOT / "cassettes" / "default"


@pytest.fixture
def layout(tmp_path):
    folder = tmp_path / "cassettes"
    folder.mkdir()
    outside = tmp_path / "elsewhere" / "precious"
    shutil.copytree(DEFAULT, outside)
    return folder, outside


def fingerprint(path: Path) -> bytes:
    return (path / "data.mdb").read_bytes()


def record(folder: Path, cassette: str, tmp_path: Path) -> subprocess.CompletedProcess:
    config = tmp_path / "c.yaml"
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("good"))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--mode",
            "record",
            "--config",
            str(config),
            "--cassettes-dir",
            str(folder),
            "--cassette",
            cassette,
            "--port",
            str(free_port()),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_recording_into_an_outside_path_or_through_a_link_is_refused(layout, tmp_path):
    folder, outside = layout
    before = fingerprint(outside)
    direct = record(folder, str(outside), tmp_path)
    assert (
        direct.returncode == 2 and "outside the cassettes folder" in direct.stderr and "Traceback" not in direct.stderr
    )
    (folder / "link").symlink_to(outside)
    linked = record(folder, "link", tmp_path)
    assert linked.returncode == 2 and "symbolic link" in linked.stderr and "Traceback" not in linked.stderr
    assert fingerprint(outside) == before and not (outside / "lock.mdb").exists()


def test_an_outside_cassette_named_by_path_can_be_read(layout, capsys):
    folder, outside = layout
    assert main(["cassette", "--cassettes-dir", str(folder), "show", str(outside), "--json"]) == 0
    assert '"exchanges"' in capsys.readouterr().out


def test_rm_removes_cassettes_and_nothing_else(layout, capsys):
    folder, outside = layout
    argv = ["cassette", "--cassettes-dir", str(folder), "rm"]
    stray = outside.parent / "stray"  # any folder holding a data.mdb: not a cassette, named by path or not
    stray.mkdir()
    (stray / "data.mdb").write_bytes(b"")
    assert main([*argv, str(stray)]) == 2
    assert "not an LMDB file" in capsys.readouterr().err and stray.exists()

    (folder / "link").symlink_to(outside)
    assert main([*argv, "link"]) == 2
    assert (
        "symbolic link" in capsys.readouterr().err
        and (outside / "data.mdb").exists()
        and (folder / "link").is_symlink()
    )

    (folder / "empty").mkdir()
    (folder / "empty" / "data.mdb").write_bytes(b"")
    assert main([*argv, "empty"]) == 2
    assert "not an LMDB file" in capsys.readouterr().err and (folder / "empty").exists()

    shutil.copytree(DEFAULT, folder / "mixed")
    (folder / "mixed" / "notes.txt").write_text("mine")
    assert main([*argv, "mixed"]) == 2
    assert "other files" in capsys.readouterr().err and (folder / "mixed" / "notes.txt").exists()

    shutil.copytree(DEFAULT, folder / "old")
    assert main([*argv, "old"]) == 0 and not (folder / "old").exists()
    shutil.copytree(DEFAULT, folder / "broken")
    os.truncate(folder / "broken" / "data.mdb", 8192 * 3)
    assert main([*argv, "broken"]) == 0 and not (folder / "broken").exists()  # damaged, still a cassette
    assert main([*argv, str(outside)]) == 0 and not outside.exists()  # a real cassette the operator named by path
