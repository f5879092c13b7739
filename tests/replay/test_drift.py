"""Drift: recorded calls re-issued live, compared field by field, classified, stored with the cassette."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.replay.test_record_replay import calls


def mcpgw(*args, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def drift(tmp_path, *args):
    result = mcpgw("drift", "--cassettes-dir", str(tmp_path / "cassettes"), "--json", *args)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_real_offline_servers_clock_flagged_until_ignored(tmp_path):
    config = """version: 1
servers:
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time"]
    flags: [stateless]  # --learn calls tools twice: only where that cannot shift state
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
"""
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "c")
    calls(
        recorder,
        [
            ("time__get_current_time", {"timezone": "UTC"}),
            ("everything__echo", {"message": "x"}),
            ("everything__get-sum", {"a": 2, "b": 3}),
            ("time__convert_time", {"source_timezone": "UTC", "time": "10:00", "target_timezone": "Asia/Tokyo"}),
        ],
    )
    stop_gateway(recorder)
    import time

    time.sleep(1.1)
    (tmp_path / "own.yaml").write_text(config)  # not the repository's servers.lock.yaml, which drift would pick up
    code, report = drift(tmp_path, "--cassette", "c", "--learn", "--config", str(tmp_path / "own.yaml"))
    by_tool = report["by_tool"]
    assert by_tool["everything:echo"]["identical"] == 1 and by_tool["everything:get-sum"]["identical"] == 1
    assert by_tool["time:get_current_time"]["changed"] == 1 and code == 1
    assert "$.content[0].text:json.datetime" in report["proposals"]["time:get_current_time"]["paths"]

    with_rules = tmp_path / "lock.yaml"
    with_rules.write_text(
        config.replace(
            '"mcp-server-time"]\n',
            '"mcp-server-time"]\n    ignore:\n'
            '      - tool: get_current_time\n        paths: ["$.content[*].text:json.datetime", '
            '"$.structuredContent.datetime"]\n',
            1,
        )
    )
    code, report = drift(tmp_path, "--cassette", "c", "--config", str(with_rules))
    assert report["by_tool"]["time:get_current_time"]["equal_after_ignore"] == 1
    assert report["changed"] == 0 and report["failing"] == 0 and code == 0

    show = mcpgw("cassette", "--cassettes-dir", str(tmp_path / "cassettes"), "show", "c", "--json")
    assert json.loads(show.stdout)["last_drift"]["calls"] == 4


def test_new_version_differences_found_and_classified(tmp_path):
    config = "version: 1\nservers:\n" + misbehaving_entry("fx")
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "c")
    calls(recorder, [("fx__echo", {"message": "hi"}), ("fx__counter", {}), ("fx__wipe", {}), ("fx__garbage", {})])
    stop_gateway(recorder)
    changed = tmp_path / "v2.yaml"
    changed.write_text(
        "version: 1\nservers:\n"
        + misbehaving_entry("fx", "--echo-prefix", "ECHO", "--drop-tool", "garbage", "--echo-requires", "lang")
    )
    code, report = drift(tmp_path, "--cassette", "c", "--config", str(changed))
    detail = {c["tool"]: c for c in report["calls_detail"]}
    assert code == 1
    assert detail["echo"]["verdict"] == "changed"
    assert detail["echo"]["differences"] == [{"path": "$.content[0].text", "recorded": "echo: hi", "live": "ECHO: hi"}]
    assert detail["counter"]["verdict"] == "identical"
    assert detail["wipe"]["verdict"] == "skipped" and "destructiveHint" in detail["wipe"]["error"]
    assert detail["garbage"]["verdict"] == "failing"  # the tool is gone in the new version
    breaking = json.dumps(report["catalog"]["fx"]["breaking"])
    assert "garbage" in breaking and "lang" in breaking  # removed tool, new required parameter
    assert report["catalog_breaking"] == 2
    code, report = drift(tmp_path, "--cassette", "c", "--config", str(changed), "--include-unsafe")
    assert {c["tool"]: c["verdict"] for c in report["calls_detail"]}["wipe"] == "identical"


def test_server_down_is_failing_and_the_rest_is_complete(tmp_path):
    config = "version: 1\nservers:\n" + misbehaving_entry("fx") + misbehaving_entry("other")
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "c")
    calls(recorder, [("fx__echo", {"message": "a"}), ("other__echo", {"message": "b"})])
    stop_gateway(recorder)
    down = tmp_path / "down.yaml"
    down.write_text("version: 1\nservers:\n" + misbehaving_entry("fx", "--exit-at-start") + misbehaving_entry("other"))
    code, report = drift(tmp_path, "--cassette", "c", "--config", str(down))
    detail = {c["server"]: c for c in report["calls_detail"]}
    assert detail["fx"]["verdict"] == "failing" and "missing database" in detail["fx"]["error"]
    assert detail["other"]["verdict"] == "identical"
    assert report["servers"]["fx"]["state"] != "ready" and code == 1
    code, _ = drift(tmp_path, "--cassette", "c", "--config", str(down), "--max-drift", "0.5")
    assert code == 0


def test_drift_results_appear_in_the_html_report(tmp_path):
    config = "version: 1\nservers:\n" + misbehaving_entry("fx")
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "c")
    calls(recorder, [("fx__echo", {"message": "hi"}), ("fx__counter", {})])
    stop_gateway(recorder)
    changed = tmp_path / "v2.yaml"
    changed.write_text("version: 1\nservers:\n" + misbehaving_entry("fx", "--echo-prefix", "ECHO"))
    drift(tmp_path, "--cassette", "c", "--config", str(changed))
    html = tmp_path / "report.html"
    result = mcpgw("eval", "--cassette", str(tmp_path / "cassettes" / "c"), "--format", "html", "-o", str(html))
    assert result.returncode == 0, result.stderr
    page = html.read_text()
    assert "Drift: live vs recorded" in page and "fx:echo" in page and "50.0% changed or failing" in page


@pytest.mark.real  # starts a registry package (npx/uvx)
def test_runs_recorded_on_instances_of_their_own_are_reissued_on_instances_of_their_own(tmp_path):
    # memory and sequential-thinking keep state; `stateful` gives each recorded run a fresh instance,
    # so drift must too: one shared instance would show run A's entities and thoughts in run B's answers.
    config = """version: 1
servers:
  memory:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
    env: {MEMORY_FILE_PATH: "${RUN_STATE_DIR}/memory.json"}
    flags: [stateful]
  thinking:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-sequential-thinking@2026.8.31"]
    flags: [stateful]
"""
    recorder = start_gateway(tmp_path, config, "--mode", "record", "--cassette", "c")
    for run_id, who, mode in (("a", "Ada", "legacy"), ("b", "Bea", "2026-07-28")):
        results = calls(
            recorder,
            [
                (
                    "memory__create_entities",
                    {"entities": [{"name": who, "entityType": "person", "observations": ["x"]}]},
                ),
                ("memory__read_graph", {}),
                (
                    "thinking__sequentialthinking",
                    {"thought": f"{who} thinks", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False},
                ),
            ],
            mode=mode,
            run_id=run_id,
        )
        graph = json.loads(results[1]["content"][0]["text"])
        assert [e["name"] for e in graph["entities"]] == [who]  # the recording itself kept the runs apart
        assert json.loads(results[2]["content"][0]["text"])["thoughtHistoryLength"] == 1
    stop_gateway(recorder)
    (tmp_path / "own.yaml").write_text(config)
    code, report = drift(tmp_path, "--cassette", "c", "--config", str(tmp_path / "own.yaml"))
    assert report["by_tool"] == {
        "memory:create_entities": {
            **dict.fromkeys(("equal_after_ignore", "changed", "failing", "skipped"), 0),
            "identical": 2,
        },
        "memory:read_graph": {
            **dict.fromkeys(("equal_after_ignore", "changed", "failing", "skipped"), 0),
            "identical": 2,
        },
        "thinking:sequentialthinking": {
            **dict.fromkeys(("equal_after_ignore", "changed", "failing", "skipped"), 0),
            "identical": 2,
        },
    }, report["calls_detail"]
    assert code == 0
