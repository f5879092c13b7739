"""`mcpgw run --ray`: 40 MCP-Bench tasks fanned out over a Ray cluster of two nodes on this
host (one gateway per node, the local profile's offline servers started by each), a scripted
model over HTTP. Recorded across the nodes, replayed across nodes whose PATH is empty with the
model stopped, and replayed on one machine without Ray: the same answers file, call log and
scores all three ways. A node killed mid-record, then the driver killed: the run resumes and
finishes with one final attempt per task, and its merged cassette replays the same. Bad input
(an address nobody answers at, no Ray installed, nodes without the servers) is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from tests.runs.ray_cluster import ConversationModel, local_cluster, many_tasks, mcpgw_run, record_args, script
from tests.runs.test_end_to_end import call_log, scores, single_server_tasks

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")
pytestmark = pytest.mark.real

TASKS = 40
OFFLINE = {k: v for k, v in os.environ.items() if k != "PATH"}


def answers_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_record_and_replay_across_nodes_equal_one_machine(tmp_path):
    tasks, cassettes = tmp_path / "tasks.json", tmp_path / "cassettes"
    ids = many_tasks(single_server_tasks(tmp_path), tasks, TASKS)
    with local_cluster(2) as cluster, ConversationModel(script()) as model:
        recorded = mcpgw_run(
            tasks, tmp_path / "rec.jsonl", cassettes, *record_args(model), "--cassette", "rec", "--ray", cluster.address
        )
    assert recorded.returncode == 0, recorded.stderr
    answers = answers_of(tmp_path / "rec.jsonl")
    assert [a["task_id"] for a in answers] == ids  # task-file order, wherever each ran
    assert {a["status"] for a in answers} == {"ok"} and all(a["final_answer"].startswith("Report for") for a in answers)
    assert not (cassettes / "rec.parts").exists()  # merged, parts removed
    placed = {t["node"] for t in timings(cassettes / "rec").values()}
    assert len(placed) == 2, placed  # both nodes ran tasks
    recorded_log, recorded_scores = call_log(cassettes / "rec"), scores(cassettes / "rec", tmp_path / "rec-scores.json")
    assert json.loads(recorded_scores)["mcpbench_rules"]

    # Across nodes whose PATH is empty (no uvx, no npx: no server could start), the model stopped.
    with local_cluster(2, env={"PATH": ""}) as cluster:
        assert_nodes_without_path(cluster.address)
        across = mcpgw_run(
            tasks,
            tmp_path / "rep-ray.jsonl",
            cassettes,
            "--mode",
            "replay",
            "--cassette",
            "rec",
            "--log-cassette",
            "rep-ray",
            "--ray",
            cluster.address,
            env=OFFLINE,
        )
    assert across.returncode == 0, across.stderr
    # On one machine, without Ray.
    alone = mcpgw_run(
        tasks,
        tmp_path / "rep-local.jsonl",
        cassettes,
        "--mode",
        "replay",
        "--cassette",
        "rec",
        "--log-cassette",
        "rep-local",
        env=OFFLINE,
    )
    assert alone.returncode == 0, alone.stderr
    rec_bytes = (tmp_path / "rec.jsonl").read_bytes()
    for name in ("rep-ray", "rep-local"):
        assert (tmp_path / f"{name}.jsonl").read_bytes() == rec_bytes, name
        assert call_log(cassettes / name) == recorded_log, name
        assert scores(cassettes / name, tmp_path / f"{name}-scores.json") == recorded_scores, name


def timings(cassette) -> dict:
    from mcpgw.cassette.cassette import Cassette
    from mcpgw.runs.manifest import KIND

    opened = Cassette(cassette, create=False, readonly=True)
    try:
        manifests = [r for r in opened.runs() if r.get("kind") == KIND]
    finally:
        opened.close()
    return manifests[-1]["timings"]


def assert_nodes_without_path(address: str) -> None:
    probe = (
        "import ray; ray.init(address=%r, logging_level='ERROR'); "
        "f = ray.remote(num_cpus=1)(lambda: __import__('os').environ.get('PATH')); "
        "print(set(ray.get([f.remote() for _ in range(4)])))" % address
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() in ("{''}", "{None}"), out.stdout + out.stderr


def test_a_node_killed_mid_record_then_the_driver_killed_loses_nothing(tmp_path):
    tasks, cassettes, answers = tmp_path / "tasks.json", tmp_path / "cassettes", tmp_path / "rec.jsonl"
    ids = many_tasks(single_server_tasks(tmp_path), tasks, TASKS)
    with local_cluster(3) as cluster, ConversationModel(script()) as model:
        args = [*record_args(model), "--cassette", "rec", "--ray", cluster.address]
        driver = start_driver(tasks, answers, cassettes, args)
        try:
            wait_for_answers(answers, 6, driver)
            # 3 tasks in flight on 3 one-CPU nodes: every node holds one, so the victim dies mid-task
            # (with 2 in flight, one node in three was idle and sometimes it was the victim: nothing to rerun)
            victim = cluster.worker_nodes and sorted(cluster.worker_nodes, key=lambda n: n.unique_id)[0]
            cluster.remove_node(victim)  # its raylet, its workers, its gateway's actor: gone mid-task
            wait_for_answers(answers, 20, driver)
            driver.send_signal(signal.SIGKILL)  # and then the driver itself
            driver.wait(30)
        finally:
            if driver.poll() is None:
                driver.kill()
        assert not orphan_gateways(cassettes), "a gateway outlived its node or its driver"
        assert (cassettes / "rec.parts").is_dir()  # the dead driver's parts are there to merge
        resumed = mcpgw_run(tasks, answers, cassettes, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert "already done" in resumed.stderr and "(0 already done)" not in resumed.stderr
    final = answers_of(answers)
    assert [a["task_id"] for a in final] == ids and {a["status"] for a in final} == {"ok"}
    assert any(a["attempt"] > 1 for a in final), "no task was rerun after its node died"
    assert not (cassettes / "rec.parts").exists()
    # The merged cassette replays on one machine: the same answers, byte for byte.
    replay = mcpgw_run(
        tasks,
        tmp_path / "rep.jsonl",
        cassettes,
        "--mode",
        "replay",
        "--cassette",
        "rec",
        "--log-cassette",
        "rep",
        env=OFFLINE,
    )
    assert replay.returncode == 0, replay.stderr
    assert (tmp_path / "rep.jsonl").read_bytes() == answers.read_bytes()
    assert call_log(cassettes / "rep") == final_attempts_log(call_log(cassettes / "rec"), final)


def final_attempts_log(log: str, final: list[dict]) -> str:
    """The recorded call log less the attempts that were not final (lost with their node or driver)."""
    kept = {a["run_id"] for a in final}
    return "\n".join(line for line in log.splitlines() if json.loads(line)["run_id"] in kept)


def start_driver(tasks, answers, cassettes, args) -> subprocess.Popen:
    from tests.runs.ray_cluster import RAY_ENV

    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "run",
            str(tasks),
            "--model",
            "scripted-1",
            "--strategy",
            "tc",
            "--max-rounds",
            "6",
            "--concurrency",
            "3",
            "--answers",
            str(answers),
            "--cassettes-dir",
            str(cassettes),
            *args,
        ],
        cwd=ROOT,
        env={**os.environ, **RAY_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_answers(path, count: int, driver: subprocess.Popen, limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        assert driver.poll() is None, driver.stderr.read()
        time.sleep(0.1)  # polling a file another process writes; bounded by the deadline
    raise AssertionError(f"fewer than {count} answers within {limit:g}s")


def orphan_gateways(cassettes) -> list[str]:
    """`mcpgw serve` processes still writing a part of this run (a few seconds' grace for SIGTERM)."""
    deadline = time.monotonic() + 30
    while True:
        found = []
        for proc in os.listdir("/proc"):
            try:
                cmdline = open(f"/proc/{proc}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if "serve" in cmdline and str(cassettes / "rec.parts") in cmdline:
                found.append(proc)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


# -- bad input -------------------------------------------------------------------------------


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    return lines[0]


def test_an_address_nobody_answers_at_is_one_line(tmp_path):
    from mcpgw.runs.gateway_process import free_port

    tasks = single_server_tasks(tmp_path)
    result = mcpgw_run(
        tasks,
        tmp_path / "a.jsonl",
        tmp_path / "c",
        "--mode",
        "replay",
        "--cassette",
        "x",
        "--ray",
        f"127.0.0.1:{free_port()}",
        timeout=60,
    )
    assert "no cassette 'x'" in one_line(result)
    (tmp_path / "c").mkdir()
    from mcpgw.cassette.cassette import Cassette

    Cassette(tmp_path / "c" / "x").close()
    result = mcpgw_run(
        tasks,
        tmp_path / "a.jsonl",
        tmp_path / "c",
        "--mode",
        "replay",
        "--cassette",
        "x",
        "--ray",
        f"127.0.0.1:{free_port()}",
        timeout=60,
    )
    assert "no Ray cluster answering there" in one_line(result)
    assert not (tmp_path / "a.jsonl").exists() and sorted(p.name for p in (tmp_path / "c").iterdir()) == ["x"]


def test_without_ray_installed_is_one_line(tmp_path):
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    tasks = single_server_tasks(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    result = mcpgw_run(
        tasks,
        tmp_path / "a.jsonl",
        tmp_path / "c",
        "--mode",
        "record",
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
        "--ray",
        env=env,
        timeout=60,
    )
    assert "pip install 'mcpgw[ray]'" in one_line(result)
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "c").exists()


def test_nodes_without_the_servers_is_one_line_and_writes_nothing(tmp_path):
    tasks, cassettes = tmp_path / "tasks.json", tmp_path / "cassettes"
    many_tasks(single_server_tasks(tmp_path), tasks, 4)
    with local_cluster(1, env={"PATH": ""}) as cluster, ConversationModel(script()) as model:
        result = mcpgw_run(
            tasks, tmp_path / "a.jsonl", cassettes, *record_args(model), "--cassette", "rec", "--ray", cluster.address
        )
        assert not model.seen
    line = one_line(result)
    assert line.startswith("mcpgw: node 127.0.0.1 (") and "server medical_calculator is" in line, line
    assert "mcpgw servers install" in line
    assert not (tmp_path / "a.jsonl").exists() and not (cassettes / "rec").exists()
    assert not (cassettes / "rec.parts").exists()  # the gateways' logs are kept, in rec.gateway-logs/
