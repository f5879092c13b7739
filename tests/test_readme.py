"""The README's shell blocks, run as written against a fresh `mcpgw serve` (the embedded default cassette).

A block that needs more than that (a live gateway, a model endpoint, the network, a file of the reader's own)
says so on the line before its fence: `<!-- readme-test: needs <what> -->`; the test skips those, and runs
every other block's commands, with `127.0.0.1:8765` pointed at the test's gateway: curl requests through
httpx, anything else through bash. No answer may be a replay miss or an error.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, SERVING

MARKER = re.compile(r"<!--\s*readme-test:\s*needs\s+(\S.*?)\s*-->")


def shell_blocks(text: str) -> list[tuple[int, str | None, list[str]]]:
    """(line of the fence, what the block says it needs or None, its commands with continuations joined)."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            start = i
            needs = None
            before = lines[i - 1].strip() if i else ""
            if (said := MARKER.fullmatch(before)) is not None:
                needs = said.group(1)
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((start + 1, needs, commands(body)))
        i += 1
    return blocks


def commands(body: list[str]) -> list[str]:
    joined, current = [], ""
    for line in body:
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        text = current.split(" #")[0].strip() if not current.lstrip().startswith("#") else ""
        if text:
            joined.append(text)
        current = ""
    return joined


def curl_request(command: str, base: str) -> httpx.Request:
    words = shlex.split(command.replace("http://127.0.0.1:8765", base))
    assert words[0] == "curl", command
    method, headers, body, url = "GET", {}, None, None
    words = iter(words[1:])
    for word in words:
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data"):
            body = next(words)
            method = "POST" if method == "GET" else method
        elif word in ("-s", "-S", "-sS"):
            continue
        elif word.startswith("-"):
            raise AssertionError(f"curl option {word} not understood by this test: {command}")
        else:
            url = word
    assert url, command
    return httpx.Request(method, url, headers=headers, content=body)


def check_answer(command: str, answer: httpx.Response) -> None:
    assert answer.status_code == 200, f"{command}\n-> {answer.status_code} {answer.text[:500]}"
    assert "replay miss" not in answer.text, f"{command}\n-> {answer.text[:500]}"
    data = answer.json()
    if isinstance(data, dict) and "code" in data:  # mcprouter's envelope
        assert data["code"] == 0, f"{command}\n-> {answer.text[:500]}"
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        assert data["data"].get("isError") is not True, f"{command}\n-> {answer.text[:500]}"


@pytest.fixture
def default_gateway(tmp_path: Path):
    """A bare `mcpgw serve` (no mode, no config) on a free loopback port, run from an empty folder."""
    log_path = tmp_path / "gateway.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpgw.cli", "serve", "--port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while not (said := SERVING.search(log_path.read_text())):
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
        base = said.group(1)
        while httpx.get(base + "/readyz", timeout=5).status_code != 200:
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def test_every_readme_shell_block_runs_or_says_what_it_needs(default_gateway: str, tmp_path: Path):
    blocks = shell_blocks((ROOT / "README.md").read_text())
    runnable = [(line, cmds) for line, needs, cmds in blocks if needs is None]
    assert runnable, "no README block runs against the default gateway"
    ran = 0
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with httpx.Client(timeout=30) as client:
        for line, cmds in runnable:
            for command in cmds:
                where = f"README.md:{line}: {command}"
                if command.startswith("curl "):
                    check_answer(where, client.send(curl_request(command, default_gateway)))
                else:
                    done = subprocess.run(
                        ["bash", "-c", command.replace("http://127.0.0.1:8765", default_gateway)],
                        cwd=tmp_path,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=120,
                    )
                    said = done.stdout + done.stderr
                    assert done.returncode == 0 and "replay miss" not in said, f"{where}\n-> {said[-1000:]}"
                ran += 1
    assert ran >= 4


def test_blocks_are_read_with_their_markers():
    text = "\n".join(
        [
            "<!-- readme-test: needs a live gateway -->",
            "```bash",
            "mcpgw serve --mode live  # comment",
            "```",
            "```bash",
            "curl -s -X POST http://127.0.0.1:8765/v1/x \\",
            "  -d '{\"a\": 1}'",
            "# only a comment",
            "```",
        ]
    )
    assert shell_blocks(text) == [
        (2, "a live gateway", ["mcpgw serve --mode live"]),
        (5, None, ["curl -s -X POST http://127.0.0.1:8765/v1/x    -d '{\"a\": 1}'"]),
    ]
    request = curl_request(shell_blocks(text)[1][2][0], "http://h:1")
    assert (request.method, str(request.url), json.loads(request.content)) == ("POST", "http://h:1/v1/x", {"a": 1})
