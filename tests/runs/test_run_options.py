"""`mcpgw run --temperature/--seed/--task-timeout` do what the README says: the first two reach the
model with every request, the third ends a task whose model is too slow as `timeout` (exit 1); `--port`
puts the gateway it starts on that port."""

from __future__ import annotations

import json

from mcpgw.cli import main
from tests.conftest import free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel

TASKS = {"server_tasks": [{"server_name": "fx", "tasks": [
    {"task_id": "quick", "task_description": "QUICK: say hello."},
    {"task_id": "slow", "task_description": "SLOW: say hello slowly."}]}]}


def test_temperature_and_seed_reach_the_model_and_task_timeout_ends_a_slow_task(tmp_path, capsys):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    model = ScriptedModel({("tc", "QUICK"): [{"text": "hello"}] * 2,
                           ("tc", "SLOW"): [{"hold": 120}]}).start()
    gateway = start_gateway(tmp_path, "version: 1\nservers:\n" + misbehaving_entry("fx"), "--mode", "record",
                            "--llm-base-url", model.base_url)
    try:
        common = ["run", str(tasks), "--model", "scripted-1", "--gateway", gateway.base, "--distraction-count", "0"]
        assert main([*common, "--task-id", "quick", "--answers", str(tmp_path / "a.jsonl"),
                     "--temperature", "0.25", "--seed", "1234"]) == 0, capsys.readouterr().err
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
        common = ["run", str(tasks), "--model", "scripted-1", "--task-id", "quick", "--distraction-count", "0",
                  "--mode", "record", "--config", str(config), "--cassettes-dir", str(tmp_path / "cassettes"),
                  "--llm-base-url", model.base_url]
        assert main([*common, "--cassette", "on-port", "--port", str(port),
                     "--answers", str(tmp_path / "a.jsonl")]) == 0, capsys.readouterr().err
        # Taken by another gateway, whose /status answers as one would: refused before starting, not used.
        other = start_gateway(tmp_path / "other", "version: 1\nservers:\n" + misbehaving_entry("fx"), "--mode", "live")
        busy = int(other.base.rsplit(":", 1)[1])
        try:
            assert main([*common, "--cassette", "busy", "--port", str(busy), "--answers", str(tmp_path / "b.jsonl")]) == 2
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

    from runs.cli import STRATEGY_NAMES
    from runs.strategies import STRATEGIES

    assert sorted(STRATEGY_NAMES) == sorted(STRATEGIES)
    probe = ("import sys\nfrom mcpgw.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('runs.strategies')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:] + out.stderr[-500:]
