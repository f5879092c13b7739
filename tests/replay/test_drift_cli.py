"""`mcpgw drift` takes the entries of ./servers.lock.yaml when there is one, and says which are in force."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.replay.test_record_replay import calls


def drift_in(cwd, cassettes, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "drift", "--cassette", "c", "--cassettes-dir", str(cassettes), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=240,
    )
    return result


def test_lock_file_in_the_working_folder_wins_over_the_recorded_entries(tmp_path):
    recorder = start_gateway(
        tmp_path,
        "version: 1\nservers:\n" + misbehaving_entry("fx") + misbehaving_entry("gone"),
        "--mode",
        "record",
        "--cassette",
        "c",
    )
    calls(recorder, [("fx__echo", {"message": "hi"}), ("gone__echo", {"message": "there"})])
    stop_gateway(recorder)
    cassettes = tmp_path / "cassettes"

    plain = tmp_path / "no-lock"
    plain.mkdir()
    result = drift_in(plain, cassettes, "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["identical"] == 2
    assert report["entries"] == {
        "lock_file": None,
        "servers": {"fx": {"entry": "cassette", "ignore_rules": 0}, "gone": {"entry": "cassette", "ignore_rules": 0}},
    }

    # The lock now starts fx in a newer version whose echo answers differently, with a rule for another tool;
    # `gone` is not in it any more, so its recorded entry is used.
    locked = tmp_path / "with-lock"
    locked.mkdir()
    rule = '    ignore:\n      - tool: counter\n        paths: ["$.content[0].text"]\n'
    (locked / "servers.lock.yaml").write_text(
        "version: 1\nservers:\n" + misbehaving_entry("fx", "--echo-prefix", "ECHO", extra=rule)
    )
    result = drift_in(locked, cassettes, "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert {c["server"]: c["verdict"] for c in report["calls_detail"]} == {"fx": "changed", "gone": "identical"}
    assert report["entries"] == {
        "lock_file": "servers.lock.yaml",
        "servers": {
            "fx": {"entry": "servers.lock.yaml", "ignore_rules": 1},
            "gone": {"entry": "cassette", "ignore_rules": 0},
        },
    }

    said = drift_in(locked, cassettes).stderr  # the terminal report says the same, before the run
    assert "mcpgw: entries of servers.lock.yaml: fx (1 ignore rule(s))" in said
    assert "mcpgw: entries recorded in the cassette: gone (0 ignore rule(s))" in said
