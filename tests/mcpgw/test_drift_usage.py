"""`mcpgw drift` refuses, before anything runs, what would hang, crash or fail only after the whole run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mcpgw.cassette.store import CassetteStore
from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.replay.test_drift_cli import drift_in
from tests.replay.test_record_replay import calls


@pytest.mark.parametrize(
    "given, expected",
    [
        (["--concurrency", "0"], "mcpgw: --concurrency must be at least 1, not 0"),  # waited forever
        (["--concurrency", "-1"], "mcpgw: --concurrency must be at least 1, not -1"),  # an anyio traceback
        (["--max-drift", "2"], "mcpgw: --max-drift is a share of the calls: give a fraction between 0 and 1, not 2.0"),
        (
            ["--max-drift", "-0.5"],
            "mcpgw: --max-drift is a share of the calls: give a fraction between 0 and 1, not -0.5",
        ),
        (
            ["-o", "{tmp}/nodir/d.json"],
            "mcpgw: cannot write {tmp}/nodir/d.json: no folder {tmp}/nodir; create it or give another -o",
        ),
        (["-o", "{tmp}"], "mcpgw: cannot write {tmp}: it is a folder; give a file path for -o"),
    ],
)
def test_bad_values_are_refused_before_the_run(tmp_path, given, expected):
    CassetteStore(tmp_path / "c").close()  # an empty cassette: without the checks, drift would say it has no server
    argv = [a.format(tmp=tmp_path) for a in given]
    result = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "drift", "--cassette", "c", "--cassettes-dir", str(tmp_path), *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == expected.format(tmp=tmp_path), result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_that_cannot_be_written_after_the_run_is_one_line(tmp_path):
    recorder = start_gateway(
        tmp_path, "version: 1\nservers:\n" + misbehaving_entry("fx"), "--mode", "record", "--cassette", "c"
    )
    calls(recorder, [("fx__echo", {"message": "hi"})])
    stop_gateway(recorder)
    result = drift_in(tmp_path, tmp_path / "cassettes", "-o", "/dev/full")  # passes the checks, then the disk is full
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == "mcpgw: cannot write /dev/full: No space left on device", (
        result.stderr
    )
