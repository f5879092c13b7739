"""Model exchanges are counted where a newcomer reads a replay's counts (issue 22): the replay banner says how
many are recorded, and `cassette show`'s headline counts model hits and misses, from a replay log kept with
the cassette and from a `--log-cassette` beside it alike."""

from __future__ import annotations

import json
import subprocess
import sys

import openai
import pytest

from tests.conftest import ROOT, misbehaving_entry, start_gateway, stop_gateway
from tests.llm.scripted_model import ScriptedModel

FIXTURE = "version: 1\nservers:\n" + misbehaving_entry("fx")
SCRIPT = {("mcpbench", "alpha"): [{"text": "alpha done"}], ("mcpbench", "beta"): [{"text": "beta done"}]}


def ask(client: openai.OpenAI, marker: str) -> str:
    answer = client.chat.completions.create(
        model="scripted-1", messages=[{"role": "user", "content": f"task {marker}"}]
    )
    return answer.choices[0].message.content


def replay_once(tmp_path, *args: str) -> str:
    """One replay session: a recorded exchange (hit), then one the recording does not hold (miss)."""
    gateway = start_gateway(tmp_path, FIXTURE, "--mode", "replay", *args)
    try:
        client = openai.OpenAI(
            base_url=gateway.base + "/v1", api_key="x", max_retries=0, default_headers={"X-Run-Id": "r1"}
        )
        assert ask(client, "alpha") == "alpha done"
        with pytest.raises(openai.ConflictError):
            ask(client, "gamma")
    finally:
        stop_gateway(gateway)
    return gateway.log()


def test_the_banner_and_cassette_show_count_model_exchanges_and_model_misses(tmp_path):
    model = ScriptedModel(SCRIPT).start()
    try:
        recorder = start_gateway(tmp_path, FIXTURE, "--mode", "record", "--llm-base-url", model.base_url)
        try:
            client = openai.OpenAI(
                base_url=recorder.base + "/v1", api_key="x", max_retries=0, default_headers={"X-Run-Id": "r1"}
            )
            assert [ask(client, "alpha"), ask(client, "beta")] == ["alpha done", "beta done"]
        finally:
            stop_gateway(recorder)
    finally:
        model.stop()

    banner = replay_once(tmp_path)  # its call log is kept inside the cassette (runs/)
    assert "recorded: 0 tool calls, 0 resource reads, 0 prompts, 2 model exchanges; anything else is a miss" in banner
    replay_once(tmp_path, "--log-cassette", "log")  # its call log is a cassette of its own beside it

    show = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "cassette",
            "show",
            "test",
            "--json",
            "--cassettes-dir",
            str(tmp_path / "cassettes"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert show.returncode == 0, show.stderr
    headline = json.loads(show.stdout)["replay"]
    # Two sessions, each one model hit and one model miss; the second is read from the summary it left.
    assert (headline["runs"], headline["hits"], headline["misses"]) == (2, 2, 2)
    assert headline["missed"] == {"@model": 1}
    text = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "cassette", "show", "test", "--cassettes-dir", str(tmp_path / "cassettes")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    ).stdout
    assert "replay sessions: 2, hits 2, misses 2 (tool calls and model exchanges)" in text
