"""`mcpgw run --temperature/--seed/--task-timeout` do what the README says: the first two reach the
model with every request, the third ends a task whose model is too slow as `timeout` (exit 1); `--port`
puts the gateway it starts on that port."""

from __future__ import annotations

import json

from mcpgw.cli import main
from tests.conftest import free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel

TASKS = {
    "server_tasks": [
        {
            "server_name": "fx",
            "tasks": [
                {"task_id": "quick", "task_description": "QUICK: say hello."},
                {"task_id": "slow", "task_description": "SLOW: say hello slowly."},
            ],
        }
    ]
}


def test_temperature_and_seed_reach_the_model_and_task_timeout_ends_a_slow_task(tmp_path, capsys):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    model = ScriptedModel({("tc", "QUICK"): [{"text": "hello"}] * 2, ("tc", "SLOW"): [{"hold": 120}]}).start()
    gateway = start_gateway(
        tmp_path,
        "version: 1\nservers:\n" + misbehaving_entry("fx"),
        "--mode",
        "record",
        "--llm-base-url",
        model.base_url,
    )
    try:
        common = ["run", str(tasks), "--model", "scripted-1", "--gateway", gateway.base, "--distraction-count", "0"]
        assert (
            main(
                [
                    *common,
                    "--task-id",
                    "quick",
                    "--answers",
                    str(tmp_path / "a.jsonl"),
                    "--temperature",
                    "0.25",
                    "--seed",
                    "1234",
                ]
            )
            == 0
        ), capsys.readouterr().err
        assert main([*common, "--task-id", "quick", "--answers", str(tmp_path / "b.jsonl"), "--run-prefix", "b/"]) == 0
        assert main([*common, "--task-id", "slow", "--answers", str(tmp_path / "c.jsonl"), "--task-timeout", "2"]) == 1
    finally:
        stop_gateway(gateway)
        model.stop()
    bodies = [seen["body"] for seen in model.seen]
    quick = [b for b in bodies if "QUICK" in json.dumps(b["messages"])]
    assert len(quick) == 2
    assert (quick[0].get("temperature"), quick[0].get("seed")) == (0.25, 1234)
    assert "temperature" not in quick[1] and "seed" not in quick[1]  # not given: not sent
    slow = json.loads((tmp_path / "c.jsonl").read_text())
    assert slow["status"] == "timeout" and slow["error"] == "no final answer within 2s"
    assert "task slow (run slow): timeout" in capsys.readouterr().err


def test_run_starts_its_gateway_on_the_port_given_and_says_so_when_it_is_taken(tmp_path, capsys):
    """`mcpgw run --port` (issue 22): the gateway it starts listens there; a port already taken is one line."""
    tasks, config = tmp_path / "tasks.json", tmp_path / "fx.yaml"
    tasks.write_text(json.dumps(TASKS))
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    port = free_port()
    with ScriptedModel({("tc", "QUICK"): [{"text": "hello"}]}) as model:
        common = [
            "run",
            str(tasks),
            "--model",
            "scripted-1",
            "--task-id",
            "quick",
            "--distraction-count",
            "0",
            "--mode",
            "record",
            "--config",
            str(config),
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
            "--llm-base-url",
            model.base_url,
        ]
        assert (
            main([*common, "--cassette", "on-port", "--port", str(port), "--answers", str(tmp_path / "a.jsonl")]) == 0
        ), capsys.readouterr().err
        # Taken by another gateway, whose /status answers as one would: refused before starting, not used.
        other = start_gateway(tmp_path / "other", "version: 1\nservers:\n" + misbehaving_entry("fx"), "--mode", "live")
        busy = int(other.base.rsplit(":", 1)[1])
        try:
            assert (
                main([*common, "--cassette", "busy", "--port", str(busy), "--answers", str(tmp_path / "b.jsonl")]) == 2
            )
            assert other.status()["calls_served"] == 0  # the other gateway ran no task
        finally:
            stop_gateway(other)
    log = (tmp_path / "cassettes" / "on-port.gateway.log").read_text()
    assert f"serving MCP at http://127.0.0.1:{port}/mcp" in log
    assert json.loads((tmp_path / "a.jsonl").read_text())["status"] == "ok"
    assert not (tmp_path / "b.jsonl").exists()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"mcpgw: --port {busy}: cannot listen on 127.0.0.1:{busy}: Address already in use", err
    for wrong in (["--port", "70000"], ["--port", "8765", "--gateway", "http://127.0.0.1:9"]):
        assert main([*common, *wrong]) == 2
        said = capsys.readouterr().err.strip()
        assert said.startswith(f"mcpgw: --port {wrong[1]}: a port (0-65535)") and "\n" not in said, said


def test_strategy_choices_are_the_strategies_and_help_imports_none():
    """`--strategy`'s choices are named in runs.cli so that `mcpgw --help` does not import the strategies
    (and the MCP types under them: about half of its time); the names must stay the strategies' own."""
    import subprocess
    import sys

    from mcpgw.runs.cli import STRATEGY_NAMES
    from mcpgw.runs.strategies import STRATEGIES

    assert sorted(STRATEGY_NAMES) == sorted(STRATEGIES)
    probe = (
        "import sys\nfrom mcpgw.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('mcpgw.runs.strategies')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:] + out.stderr[-500:]


def test_run_refuses_what_it_would_destroy_or_mix_before_starting_anything(tmp_path, capsys):
    """A newcomer's slips: `--answers` naming the task file (rewritten with answers: the tasks were gone),
    a folder or a binary file (tracebacks); a task file given twice (both tasks in one lane); `--limit -1`
    (a Python slice: all tasks but the last). Each is one line, exit 2, and nothing is touched."""
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    before = tasks.read_bytes()
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    (tmp_path / "folder").mkdir()
    common = ["run", "--model", "m", "--mode", "replay", "--cassette", "none", "--cassettes-dir", str(tmp_path / "c")]
    for extra, said in (
        ([str(tasks), "--answers", str(tasks)], "that is a task file of this run"),
        ([str(tasks), "--answers", str(tmp_path / "folder")], "a folder; name the answers file"),
        ([str(tasks), "--answers", str(binary)], "cannot read it as an answers file"),
        ([str(tasks), str(tasks)], "task 'quick' is given twice"),
        ([str(tasks), "--limit", "-1"], "--limit -1: the number of tasks to run, at least 1"),
    ):
        assert main([*common[:1], *extra, *common[1:]]) == 2
        err = capsys.readouterr().err
        assert err.startswith("mcpgw: ") and said in err and "Traceback" not in err, (extra, err)
    assert tasks.read_bytes() == before and not (tmp_path / "c").exists()
    other = tmp_path / "notes.txt"
    other.write_text("my notes\n")
    assert main(["run", str(tasks), "--answers", str(other), *common[1:]]) == 2
    assert "notes.txt:1: not an answers file" in capsys.readouterr().err and other.read_text() == "my notes\n"
