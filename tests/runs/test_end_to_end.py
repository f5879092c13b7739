"""`mcpgw run` end to end: MCP-Bench's single-server tasks of the offline servers, a scripted
model over HTTP, each strategy recorded once through one gateway, then replayed many times
with the model stopped and PATH stripped: answers, call logs and scores the same every time.
A cassette whose one model reply was changed replays to a model miss at that task."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from mcpgw.cassette.store import CassetteStore
from mcpgw.cli import main
from mcpgw.recorder.calllog import iter_calls
from mcpgw.runs.gateway_process import GatewayProcess
from tests.conftest import ROOT
from tests.llm.scripted_model import ScriptedModel
from tests.runs.scripts import TASK_IDS, script

pytestmark = pytest.mark.real

ARCHIVES = sorted((ROOT.parent / "shared" / "mcp-bench").glob("*.tar.gz")) if (ROOT.parent / "shared").exists() else []
ARCHIVES = ARCHIVES or sorted(Path("/work/shared/mcp-bench").glob("*.tar.gz"))
SERVERS = ["unit_converter", "medical_calculator", "scientific_computing", "time_mcp"]
STRATEGIES = ("tc", "react", "mcpbench")
REPLAYS = int(os.environ.get("MCPGW_RUN_REPLAYS", "3"))  # the issue asks 10: MCPGW_RUN_REPLAYS=10
LOGGED = (
    "run_id",
    "exposed_name",
    "server",
    "tool",
    "arguments",
    "known_tool",
    "validation",
    "outcome",
    "is_error",
    "error",
    "result_digest",
    "result",
    "cassette_key",
)
# Model exchanges are in the call log too: recorded, then hits; what they asked and got is the same.
MODEL_LOGGED = (
    "run_id",
    "server",
    "method",
    "model",
    "stream",
    "status",
    "is_error",
    "error",
    "tokens",
    "cassette_key",
)


def single_server_tasks(tmp_path: Path) -> Path:
    if not ARCHIVES:
        pytest.skip("MCP-Bench archive not found in ../shared/mcp-bench (next to the repository)")
    with tarfile.open(ARCHIVES[0]) as archive:
        member = next(
            m for m in archive.getmembers() if m.name.endswith("tasks/mcpbench_tasks_single_runner_format.json")
        )
        out = tmp_path / "single.json"
        out.write_bytes(archive.extractfile(member).read())
    return out


def run_args(tasks: Path, strategy: str, answers: Path, *more: str) -> list[str]:
    ids = [arg for task_id in TASK_IDS for arg in ("--task-id", task_id)]
    return [
        "run",
        str(tasks),
        "--model",
        "scripted-1",
        "--strategy",
        strategy,
        "--run-prefix",
        f"{strategy}/",
        "--answers",
        str(answers),
        "--concurrency",
        "4",
        "--max-rounds",
        "6",
        *ids,
        *(["--stream"] if strategy == "tc" else []),
        *more,
    ]


def call_log(cassette: Path) -> str:
    """The deterministic fields, per run in call order (sorted within mcpbench's parallel rounds)."""
    runs: dict[str, list[str]] = {}
    for record in iter_calls(cassette):
        fields = MODEL_LOGGED if record["server"] == "@model" else LOGGED
        runs.setdefault(record["run_id"], []).append(json.dumps({k: record.get(k) for k in fields}, sort_keys=True))
    return "\n".join(
        line
        for run_id in sorted(runs)
        for line in (sorted(runs[run_id]) if run_id.startswith("mcpbench/") else runs[run_id])
    )


def scores(cassette: Path, out: Path) -> str:
    assert main(["eval", "--run", str(cassette), "--task-servers-only", "--format", "json", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    return json.dumps({k: report[k] for k in ("models", "mcpbench_rules", "servers", "warnings")}, sort_keys=True)


def change_first_reply(cassette: Path, lane: str) -> None:
    """As if the model had answered this task's first turn with another thought (same action)."""
    store = CassetteStore(cassette, create=False)
    try:
        for key, entry in store.items("exchanges"):
            if entry.get("server") == "@model" and entry.get("lane") == lane:
                message = entry["result"]["body"]["choices"][0]["message"]
                message["content"] = message["content"].replace("Thought: I need", "Thought: I really need")
                store.put("exchanges", key, entry)
                return
    finally:
        store.close()
    raise AssertionError(f"no model exchange recorded in lane {lane}")


def test_record_each_strategy_then_replay_offline_identically(tmp_path, capsys, built_cache):
    tasks = single_server_tasks(tmp_path)
    cassettes = tmp_path / "cassettes"
    model = ScriptedModel(script()).start()
    # Scientific Computing is MCP-Bench's own source build (Table 7's 26 tools), built from the snapshot.
    recording = GatewayProcess(
        [
            "--mode",
            "record",
            "--config",
            str(ROOT / "servers.lock.yaml"),
            "--servers",
            *SERVERS,
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "rec",
            "--llm-base-url",
            model.base_url,
            "--log-results",
            "2000",
        ],
        tmp_path / "record.log",
        env={**os.environ, "MCPGW_CACHE": str(built_cache)},
    )
    try:
        for strategy in STRATEGIES:
            assert (
                main(run_args(tasks, strategy, tmp_path / f"rec-{strategy}.jsonl", "--gateway", recording.base)) == 0
            ), capsys.readouterr().err
    finally:
        recording.stop()
        model.stop()
    recorded = {s: (tmp_path / f"rec-{s}.jsonl").read_bytes() for s in STRATEGIES}
    answers = [json.loads(line) for line in recorded["tc"].splitlines()]
    assert sorted(a["task_id"] for a in answers) == sorted(TASK_IDS) and {a["status"] for a in answers} == {"ok"}
    assert all(a["final_answer"].startswith("Report for") and a["tokens"]["total"] > 0 for a in answers)
    by_task = {a["task_id"]: a for a in answers}
    assert by_task["unit_converter_000"]["rounds"] == 3  # malformed call, its retry, the answer
    assert by_task["medical_calculator_001"]["model_calls"] == 3  # the 500 was retried
    log = call_log(cassettes / "rec")
    assert '"outcome": "ok"' in log and '"result": "' in log  # results are kept for the judge
    model_outcomes = {r["outcome"] for r in iter_calls(cassettes / "rec") if r["server"] == "@model"}
    assert model_outcomes == {"recorded"} and '"status": 500' in log  # the model's side of the timeline
    recorded_log, recorded_scores = log, scores(cassettes / "rec", tmp_path / "rec-scores.json")
    rules = json.loads(recorded_scores)["mcpbench_rules"]
    assert {m: r["overall"]["valid_tool_name_rate"] for m, r in rules.items()} == {
        f"scripted-1/{s}": 1.0 for s in STRATEGIES
    }  # names mapped to MCP-Bench's through the lock's titles

    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    # Once as a newcomer would: `mcpgw run --mode replay` starting its own gateway, without PATH.
    self_started = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            *run_args(
                tasks,
                "tc",
                tmp_path / "self-tc.jsonl",
                "--mode",
                "replay",
                "--cassettes-dir",
                str(cassettes),
                "--cassette",
                "rec",
            ),
        ],
        cwd=ROOT,
        env=offline,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert self_started.returncode == 0, self_started.stderr
    assert (tmp_path / "self-tc.jsonl").read_bytes() == recorded["tc"]
    for i in range(REPLAYS):
        replay = GatewayProcess(
            [
                "--mode",
                "replay",
                "--cassettes-dir",
                str(cassettes),
                "--cassette",
                "rec",
                "--log-cassette",
                f"rep{i}",
                "--log-results",
                "2000",
            ],
            tmp_path / f"rep{i}.log",
            env=offline,
        )
        try:
            for strategy in STRATEGIES:
                answers_file = tmp_path / f"rep{i}-{strategy}.jsonl"
                assert main(run_args(tasks, strategy, answers_file, "--gateway", replay.base)) == 0, (
                    capsys.readouterr().err
                )
                assert answers_file.read_bytes() == recorded[strategy], (i, strategy)
        finally:
            replay.stop()
        assert call_log(cassettes / f"rep{i}") == recorded_log, i
        assert {r["outcome"] for r in iter_calls(cassettes / f"rep{i}") if r["server"] == "@model"} == {"hit"}
        assert scores(cassettes / f"rep{i}", tmp_path / f"rep{i}-scores.json") == recorded_scores, i

    # One model reply changed: the agent's next request is one the recording never saw.
    shutil.copytree(cassettes / "rec", cassettes / "edited")
    change_first_reply(cassettes / "edited", "react/medical_calculator_000")
    capsys.readouterr()
    code = main(
        run_args(
            tasks,
            "react",
            tmp_path / "edited.jsonl",
            "--mode",
            "replay",
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "edited",
        )
    )
    err = capsys.readouterr().err
    assert code == 1
    missed = [
        json.loads(line)
        for line in (tmp_path / "edited.jsonl").read_text().splitlines()
        if json.loads(line)["status"] != "ok"
    ]
    assert [a["task_id"] for a in missed] == ["medical_calculator_000"] and missed[0]["status"] == "model_miss"
    assert "task medical_calculator_000 (run react/medical_calculator_000): model_miss" in err
    assert "message 2 differs" in missed[0]["error"] and "I really need" in missed[0]["error"], missed[0]["error"]
