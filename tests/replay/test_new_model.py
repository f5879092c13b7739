"""A new model on a recorded environment, end to end with real parts: model A (scripted, over HTTP) is
recorded with `mcpgw run` over Unit Converter, Medical Calculator, Math MCP (MCP-Bench's own source build)
and the stateful memory server; model B runs on A's recording with --model-mode live, an overlay and a
scripted simulator; then B is replayed from base + overlay with every endpoint stopped and PATH stripped.

Checked: every answer's source label; no call of the stateful server simulated; B's answers and labels the
same again offline; the base cassette's bytes untouched; the overlay inside the cassettes folder; the
evaluator's provenance columns."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgw.cassette.store import CassetteStore
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT
from tests.llm.scripted_model import ScriptedModel
from tests.replay.new_model_scripts import A_CALLS, B_CALLS, B_SOURCES, model_script, simulator_script, write_queries

pytestmark = pytest.mark.real

SERVERS = ["unit_converter", "medical_calculator", "math_mcp", "memory"]


def mcpgw(*argv: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *argv],
        cwd=ROOT,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tool_sources(log: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for record in iter_calls(log):
        if record["server"] != "@model":
            out.setdefault(record["run_id"], []).append(record["source"])
    return out


def tool_records(log: Path) -> list[dict]:
    keep = (
        "run_id",
        "exposed_name",
        "arguments",
        "outcome",
        "is_error",
        "result_digest",
        "source",
        "cassette_key",
        "simulator",
    )
    return [{k: r.get(k) for k in keep} for r in iter_calls(log) if r["server"] != "@model"]


def run_b(
    queries: Path, cassettes: Path, answers: Path, log: str, *more: str, env=None, overlay: str = "B1"
) -> subprocess.CompletedProcess:
    return mcpgw(
        "run",
        str(queries),
        "--model",
        "model-b",
        "--strategy",
        "tc",
        "--mode",
        "replay",
        "--cassettes-dir",
        str(cassettes),
        "--cassette",
        "A",
        "--overlay",
        overlay,
        "--answers",
        str(answers),
        "--log-cassette",
        log,
        "--concurrency",
        "1",
        "--max-rounds",
        "5",
        *more,
        env=env,
    )


def test_model_b_on_model_a_recording_every_answer_labelled_and_replayed_offline(tmp_path, built_cache):
    queries = write_queries(tmp_path / "queries.json")
    cassettes = tmp_path / "cassettes"
    env = {**os.environ, "MCPGW_CACHE": str(built_cache)}
    model_a = ScriptedModel(model_script(A_CALLS, "A"), model="model-a").start()
    try:
        recorded = mcpgw(
            "run",
            str(queries),
            "--model",
            "model-a",
            "--strategy",
            "tc",
            "--mode",
            "record",
            "--config",
            str(ROOT / "servers.lock.yaml"),
            "--servers",
            *SERVERS,
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "A",
            "--answers",
            str(tmp_path / "a.jsonl"),
            "--llm-base-url",
            model_a.base_url,
            "--concurrency",
            "1",
            "--max-rounds",
            "5",
            env=env,
        )
    finally:
        model_a.stop()
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    assert {s for sources in tool_sources(cassettes / "A").values() for s in sources} == {"live"}
    base = cassettes / "A" / "data.mdb"
    before = digest(base)

    model_b = ScriptedModel(model_script(B_CALLS, "B"), model="model-b").start()
    simulator = ScriptedModel(simulator_script(), model="sim-1").start()
    try:
        first = run_b(
            queries,
            cassettes,
            tmp_path / "b.jsonl",
            "b-log",
            "--model-mode",
            "live",
            "--llm-base-url",
            model_b.base_url,
            "--on-miss",
            "simulate",
            "--simulator-base-url",
            simulator.base_url,
            "--simulator-model",
            "sim-1",
            env=env,
        )
    finally:
        model_b.stop()
        simulator.stop()
    assert first.returncode == 0, first.stderr[-3000:]
    assert digest(base) == before  # the recording is never written
    assert (cassettes / "B1" / "data.mdb").exists()  # the overlay, inside the cassettes folder
    assert tool_sources(cassettes / "b-log") == B_SOURCES
    records = tool_records(cassettes / "b-log")
    simulated = [r for r in records if r["source"] == "simulated"]
    assert {r["simulator"]["model"] for r in simulated} == {"sim-1"}
    assert all(r["simulator"]["shown"] for r in simulated if "convert_temperature" in r["exposed_name"])
    assert not any(r["source"] == "simulated" for r in records if r["exposed_name"].startswith("memory__"))
    answers_b = (tmp_path / "b.jsonl").read_bytes()
    assert b"Model B on" in answers_b and b"Model A on" not in answers_b  # model B's own answers, live

    # Everything stopped, PATH stripped: base + overlay answer B again, the same bytes and labels
    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    again = run_b(queries, cassettes, tmp_path / "b-again.jsonl", "b-again", env=offline)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (tmp_path / "b-again.jsonl").read_bytes() == answers_b
    assert tool_records(cassettes / "b-again") == records
    assert digest(base) == before

    # The overlay holds what B added: its model exchanges, the simulated answers, the simulator's own exchanges
    store = CassetteStore(cassettes / "B1", create=False, readonly=True)
    try:
        servers = [entry["server"] for _, entry in store.items("exchanges")]
    finally:
        store.env.close()
    assert servers.count("@simulator") == 2 and servers.count("@model") >= 10
    assert sorted(s for s in servers if not s.startswith("@")) == ["math_mcp", "unit_converter"]

    # The evaluator: answer sources per task, and the metrics again without the tasks that rest on simulation
    report_path = tmp_path / "report.json"
    evaluated = mcpgw(
        "eval",
        "--cassette",
        str(cassettes / "b-again"),
        "--max-simulated-share",
        "0.5",
        "--format",
        "json",
        "-o",
        str(report_path),
    )
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    report = json.loads(report_path.read_text())
    found = report["provenance"]
    assert {run: row["sources"] for run, row in found["tasks"].items()} == {
        task: {s: sources.count(s) for s in dict.fromkeys(sources)} for task, sources in B_SOURCES.items()
    }
    assert found["simulated_tasks"] == found["over_max"] == ["drone", "sum"]
    real = report["real_environment"]
    assert real["tasks_left_out"] == ["drone", "sum"]
    (model,) = report["mcpbench_rules"]
    all_tasks = set(report["mcpbench_rules"][model]["tasks"])
    assert all_tasks - set(real["mcpbench_rules"][model]["tasks"]) == {"drone", "sum"}
    html = mcpgw("eval", "--cassette", str(cassettes / "b-again"), "--format", "html", "-o", str(tmp_path / "r.html"))
    assert html.returncode == 0 and "Where each task's tool answers came from" in (tmp_path / "r.html").read_text()

    # The same model with --on-miss live (another overlay): the novel calls go to the real servers, labelled live,
    # the stateful one included (a fresh instance caught up); the base is still untouched
    model_b = ScriptedModel(model_script(B_CALLS, "B"), model="model-b").start()
    try:
        live = run_b(
            queries,
            cassettes,
            tmp_path / "b-live.jsonl",
            "b-live",
            "--model-mode",
            "live",
            "--llm-base-url",
            model_b.base_url,
            "--on-miss",
            "live",
            env=env,
            overlay="B2",
        )
    finally:
        model_b.stop()
    assert live.returncode == 0, live.stderr[-3000:]
    assert tool_sources(cassettes / "b-live") == {
        **B_SOURCES,
        "memory": ["live", "live"],
        "drone": ["live"],
        "sum": ["live"],
    }
    assert digest(base) == before
