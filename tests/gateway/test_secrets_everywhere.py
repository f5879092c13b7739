"""Issue 50 item 9: every secret the process knows is masked in every file and span, in every mode.

Real `mcpgw serve` processes over tests/fixtures/misbehaving_server.py: a recording, then a replay of it with the
same --config, an overlay and a scripted simulator that quotes its caller's Authorization header back. Each secret
is a canary: a client sends it as a tool argument, and afterwards every file under the cassettes folder (data.mdb
as bytes), the call-log export, the gateway's log and the OTLP spans are searched for it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel
from tests.telemetry.receiver import Receiver

IN_CONFIG = "cfg-canary-Lq83vTz1"  # a literal env value of --config: the cassette's server entry holds it masked
IN_ENVIRONMENT = "env-canary-Rk27pWx4"  # a value the config takes from the environment
AUTH_TOKEN = "auth-canary-Mz61bQy9-0123456789"  # the gateway's own --auth-token-env
MODEL_KEY = "model-canary-Hd45nJc8"  # --llm-key-env
SIMULATOR_KEY = "sim-canary-Wf19tGe6"  # --simulator-key-env (replay only: record has no simulator)
RECORDED = (IN_CONFIG, IN_ENVIRONMENT, AUTH_TOKEN, MODEL_KEY)
CANARIES = (*RECORDED, SIMULATOR_KEY)

CONFIG = "version: 1\nservers:\n" + misbehaving_entry(
    "fx", extra=f'    flags: [stateless]\n    env: {{API_KEY: "{IN_CONFIG}", OTHER_KEY: "${{MCPGW_TEST_CANARY}}"}}\n'
)
JSON_ONLY = {"Accept": "application/json", "Content-Type": "application/json"}


def echo(base: str, message: str, rid: int, run: str = "r1") -> dict:
    """A one-shot tools/call of fx's echo, with the gateway's token, in run `run`."""
    answer = httpx.post(
        base + f"/servers/fx/mcp?run={run}",
        timeout=60,
        json={
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": message}},
        },
        headers={**JSON_ONLY, "Authorization": f"Bearer {AUTH_TOKEN}"},
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def exported(cassettes, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *argv, "--cassettes-dir", str(cassettes)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_secret_the_process_knows_reaches_a_file_a_span_or_a_log_in_record_or_replay(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPGW_TEST_CANARY", IN_ENVIRONMENT)
    monkeypatch.setenv("MCPGW_TEST_TOKEN", AUTH_TOKEN)
    monkeypatch.setenv("MCPGW_TEST_MODEL_KEY", MODEL_KEY)
    monkeypatch.setenv("MCPGW_TEST_SIM_KEY", SIMULATOR_KEY)
    common = (
        "--auth-token-env",
        "MCPGW_TEST_TOKEN",
        "--llm-key-env",
        "MCPGW_TEST_MODEL_KEY",
        "--trace-content",
        "--log-results",
        "1000",
    )
    simulator = ScriptedModel(
        {("mcpbench", "Tool definition"): [{"text": "simulated.", "echo_authorization": True}] * 8}, model="sim-1"
    ).start()
    try:
        with Receiver() as receiver:
            recording = start_gateway(
                tmp_path, CONFIG, "--mode", "record", "--otlp-endpoint", receiver.url, *common, token=AUTH_TOKEN
            )
            try:
                for rid, canary in enumerate(RECORDED):
                    assert echo(recording.base, canary, rid)["content"][0]["text"] == f"echo: {canary}"
            finally:
                stop_gateway(recording)
            logs = [recording.log()]
            replay = start_gateway(
                tmp_path,
                CONFIG,
                "--mode",
                "replay",
                "--overlay",
                "B",
                "--on-miss",
                "simulate",
                "--simulator-base-url",
                simulator.base_url,
                "--simulator-model",
                "sim-1",
                "--simulator-key-env",
                "MCPGW_TEST_SIM_KEY",
                "--otlp-endpoint",
                receiver.url,
                *common,
                token=AUTH_TOKEN,
            )
            try:
                # recorded: the answer as stored (checked last, after where each canary went)
                answers = [echo(replay.base, canary, rid)["content"][0]["text"] for rid, canary in enumerate(RECORDED)]
                for rid, canary in enumerate(CANARIES, 10):  # new: simulated, the simulator's key quoted in the answer
                    # (in a run whose id quotes the model's key: the session's summary names its runs)
                    text = echo(replay.base, f"new {canary}", rid, run=f"r2-{MODEL_KEY}")["content"][0]["text"]
                    assert "simulated." in text
            finally:
                stop_gateway(replay)
            logs.append(replay.log())
            receiver.wait_for(lambda r: sum(s["name"].startswith("tools/call") for s in r.spans) == 4 + 4 + 5)
            spans = json.dumps(receiver.spans, ensure_ascii=False)
    finally:
        simulator.stop()
    assert {seen["authorization"] for seen in simulator.seen} == {f"Bearer {SIMULATOR_KEY}"}

    cassettes = tmp_path / "cassettes"
    replayed = [r for r in iter_calls(next((cassettes / "test" / "runs").iterdir()))]
    assert [r["source"] for r in replayed] == ["recorded"] * 4 + ["simulated"] * 5
    files = {str(path.relative_to(cassettes)): path.read_bytes() for path in cassettes.rglob("*") if path.is_file()}
    assert "B/data.mdb" in files and "test/data.mdb" in files
    exports = [
        exported(cassettes, "calls", "export", "test"),
        exported(cassettes, "calls", "export", "test", "--log", "all"),
        exported(cassettes, "cassette", "export", "test"),
        exported(cassettes, "cassette", "export", "B"),
    ]
    places = {
        **{name: data.decode("utf-8", "replace") for name, data in files.items()},
        **{f"export {i}": text for i, text in enumerate(exports)},
        "record log": logs[0],
        "replay log": logs[1],
        "spans": spans,
    }
    leaks = {canary: sorted(where for where, text in places.items() if canary in text) for canary in CANARIES}
    assert leaks == {canary: [] for canary in CANARIES}
    assert answers == ["echo: «redacted»"] * 4
    assert all("Authorization: Bearer «redacted»" in r["result"] for r in replayed[4:])  # the key was there, masked
    assert "«redacted»" in spans


def test_a_text_block_whose_text_is_not_a_string_is_logged_as_it_came(tmp_path):
    """--log-results with a live server's `text: {...}` block: code 0 and a traceback before; now the answer
    passes as the server sent it (as without --log-results) and the call log keeps the block's text as JSON."""
    gateway = start_gateway(
        tmp_path, "version: 1\nservers:\n" + misbehaving_entry("fx"), "--mode", "live", "--log-results", "100"
    )
    try:
        answer = httpx.post(
            gateway.base + "/servers/fx/mcp",
            timeout=60,
            headers=JSON_ONLY,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "odd_text", "arguments": {}}},
        )
    finally:
        stop_gateway(gateway)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["content"] == [{"type": "text", "text": {"not": "a string"}}]
    (record,) = iter_calls(gateway.cassettes / "test")
    assert (record["outcome"], record["result"]) == ("ok", '{"not": "a string"}')
    assert "Traceback" not in gateway.log()
