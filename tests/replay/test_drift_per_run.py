"""Drift on a server with a fresh instance per run (`isolation: run`): each recorded run is re-issued to an
instance of its own, as it was recorded, so one run's state never shows in another's answers."""

from __future__ import annotations

from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.replay.test_drift import drift
from tests.replay.test_record_replay import calls


def test_each_recorded_run_replays_on_a_fresh_instance(tmp_path):
    config = "version: 1\nservers:\n" + misbehaving_entry("fx", extra="    isolation: run\n")
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "c")
    for run_id in ("r1", "r2"):  # the counter counts per instance: each run saw 1, then 2
        texts = [
            r["content"][0]["text"] for r in calls(recorder, [("fx__counter", {}), ("fx__counter", {})], run_id=run_id)
        ]
        assert texts == ["count 1", "count 2"], run_id
    stop_gateway(recorder)
    (tmp_path / "own.yaml").write_text(config)
    code, report = drift(tmp_path, "--cassette", "c", "--config", str(tmp_path / "own.yaml"))
    # One shared instance would have answered run r2 with 3 and 4: "changed".
    assert report["by_tool"]["fx:counter"]["identical"] == 4, report["calls_detail"]
    assert code == 0
