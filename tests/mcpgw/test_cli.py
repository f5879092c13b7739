"""The command line's rough edges: one error prefix, guesses for typos, no silent mode switch,
a protected shipped cassette, --cassettes-dir on either side of a subcommand, output printed once."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import httpx
import pytest

from mcpgw.cassette.store import CassetteStore
from mcpgw.cli import main
from mcpgw.commands.serve import default_mode
from mcpgw.gateway.errors.tree import GatewayError
from tests.conftest import ROOT, free_port, misbehaving_entry
from tests.evaluator import scenario


def mcpgw(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["serv"], "mcpgw: unknown command 'serv'; did you mean serve or servers?"),
        (["cassete", "ls"], "mcpgw: unknown command 'cassete'; did you mean cassette"),
        (["cassette", "lss"], "mcpgw: unknown `mcpgw cassette` action 'lss'; did you mean ls?"),
        (["calls", "exprot", "x"], "mcpgw: unknown `mcpgw calls` action 'exprot'; did you mean export?"),
        (["xyzzy"], "mcpgw: unknown command 'xyzzy'; choose from serve, servers, calls, cassette"),
        (["serve", "--port", "x"], "mcpgw: argument --port: invalid int value: 'x' (see `mcpgw serve --help`)"),
        (
            ["serve", "--port", "99999"],
            "mcpgw: --port must be a TCP port number (1-65535, or 0 for any free one), not 99999",
        ),
        (["serve", "--port", "-1"], "mcpgw: --port must be a TCP port number (1-65535, or 0 for any free one), not -1"),
        (
            ["serve", "--port", "0", "--workers", "2"],
            "mcpgw: --port 0 serves one process only: give --workers a fixed --port",
        ),
        (
            ["serve", "--call-timeout", "0"],
            "mcpgw: --call-timeout must be a positive number, not 0.0",
        ),  # every call timed out
        (["serve", "--ready-timeout", "nan"], "mcpgw: --ready-timeout must be a positive number, not nan"),
    ],
)
def test_one_line_errors_with_a_guess(argv, expected):
    result = mcpgw(*argv)
    assert result.returncode == 2
    assert result.stderr.startswith(expected) and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_port_0_serves_on_a_free_port_and_says_which(tmp_path):
    """As uvicorn does: the port the system chose is printed, and the gateway answers there."""
    config = tmp_path / "c.yaml"
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--port",
            "0",
            "--config",
            str(config),
            "--mode",
            "live",
            "--cassettes-dir",
            str(tmp_path),
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        line = next(line for line in process.stderr if "serving MCP at" in line)
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/mcp ", line).group(1))
        assert port > 0 and f"(status: http://127.0.0.1:{port}/status)" in line
        assert httpx.get(f"http://127.0.0.1:{port}/status", timeout=10).json()["servers"].keys() == {"fx"}
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


def serve_args(tmp_path, **given):
    values = {"config": None, "profile": None, "servers": None, "cassette": None, "cassettes_dir": str(tmp_path)}
    return argparse.Namespace(**{**values, **given})


def test_serve_says_which_mode_and_why(tmp_path, capsys):
    assert default_mode(serve_args(tmp_path, profile="local"), None) == "live"
    assert capsys.readouterr().err.strip() == "mcpgw: mode live, because --profile was given without --mode"
    CassetteStore(tmp_path / "default").close()
    assert default_mode(serve_args(tmp_path), tmp_path / "default") == "replay"
    assert "mode replay of cassette 'default'" in capsys.readouterr().err


def test_serve_without_the_cassette_says_so_and_starts_nothing(tmp_path, capsys):
    # The default always exists (a checkout's cassettes/default, or the copy inside an installed
    # package: tests/test_packaging.py); a named cassette that is missing must not become "live".
    result = mcpgw(
        "serve", "--cassettes-dir", str(tmp_path / "none"), "--cassette", "missing", "--port", str(free_port())
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"mcpgw: no cassette 'missing' in {tmp_path / 'none'}/ to replay")
    assert "mcpgw serve --mode live" in line
    args = serve_args(tmp_path / "none")  # and were the default gone too, the same refusal, with how to restore it
    with pytest.raises(GatewayError, match="git checkout -- cassettes/default"):
        default_mode(args, None)


def test_the_shipped_cassette_is_removed_only_with_force(tmp_path, capsys):
    for name in ("default", "other"):
        CassetteStore(tmp_path / name).close()
    assert main(["cassette", "rm", "default", "--cassettes-dir", str(tmp_path)]) == 2
    assert "remove it anyway with: mcpgw cassette rm default --force" in capsys.readouterr().err
    assert (tmp_path / "default" / "data.mdb").exists()
    assert main(["cassette", "--cassettes-dir", str(tmp_path), "rm", "other"]) == 0  # others need no flag
    assert main(["cassette", "rm", str(tmp_path / "default"), "--force"]) == 0  # a path works as well as a name
    assert not (tmp_path / "default").exists() and not (tmp_path / "other").exists()


def test_cassettes_dir_before_or_after_the_action(tmp_path, capsys):
    CassetteStore(tmp_path / "a-cassette-with-a-rather-long-name-that-would-not-fit-in-eighty-columns").close()
    for argv in (
        ["cassette", "--cassettes-dir", str(tmp_path), "ls"],
        ["cassette", "ls", "--cassettes-dir", str(tmp_path)],
    ):
        assert main(argv) == 0
        out = capsys.readouterr().out  # not a terminal here: the table must not be cut at 80 columns
        assert "a-cassette-with-a-rather-long-name-that-would-not-fit-in-eighty-columns" in out


def test_audit_threshold_lines_are_printed_once(tmp_path, capsys):
    files = scenario.build(tmp_path)
    assert main(["audit", "--calls", str(files["calls"]), "--fail-under", "validity=0.9"]) == 1
    captured = capsys.readouterr()
    both = captured.out + captured.err
    assert both.count("weather/forecast: validity 0.857 < 0.9") == 1 and "below threshold" in captured.out
    assert main(["audit", "--calls", str(files["calls"]), "--fail-under", "validity=0.9", "--format", "json"]) == 1
    captured = capsys.readouterr()  # the JSON holds them as data; the person reads them once, on stderr
    assert captured.err.count("weather/forecast: validity 0.857 < 0.9") == 1


# -- the edges a newcomer hits (issue 22) ------------------------------------------------------


def test_an_option_value_out_of_its_choices_names_the_option_not_an_action():
    done = mcpgw("serve", "--validate", "strict")
    assert done.returncode == 2
    assert done.stderr.strip() == "mcpgw: --validate 'strict': choose from enforce, audit, off"
    # A mistyped command is still a command.
    assert "unknown command 'srve'; did you mean serve" in mcpgw("srve").stderr


def test_an_unknown_server_id_names_the_nearest_ids():
    done = mcpgw("serve", "--mode", "live", "--servers", "tim", "--port", str(free_port()))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "unknown server id 'tim' (did you mean time, time_mcp?)" in done.stderr


def test_help_shows_what_each_serve_and_run_option_defaults_to():
    serve = " ".join(mcpgw("serve", "--help").stdout.split())
    for text in (
        "--host HOST address to listen on (default 127.0.0.1",
        "--port PORT TCP port (default 8765; 0: any free one",
        "audit (default) forwards",
        "(default 16 MiB)",
    ):
        assert text in serve, text
    run = " ".join(mcpgw("run", "--help").stdout.split())
    assert "cut to CHARS (default 4000)" in run and "--port PORT port of the gateway it starts" in run


def test_a_live_serve_without_cassette_says_where_its_call_log_folders_go(tmp_path):
    """Every live run leaves a cassettes/live-<time> folder: the start says so, and how to keep it in one."""
    import os
    import signal
    import time

    config = tmp_path / "servers.lock.yaml"
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("one"))
    log_path = tmp_path / "gateway.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpgw.cli", "serve", "--config", str(config), "--port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while "mcpgw: mode live:" not in log_path.read_text() or "  one " not in log_path.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    text = log_path.read_text()
    assert (
        "each live serve without --cassette keeps its call log in a new folder like this one "
        "(cassettes/live-<time>); --cassette NAME keeps it in one"
    ) in text, text
    assert [p.name[:5] for p in (tmp_path / "cassettes").iterdir()] == ["live-"]
