"""Replay logs live inside the cassette they replay; every command reads a cassette by name or path."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import httpx

from mcpgw.cassette.store import CassetteStore
from mcpgw.recorder.calllog import CallLog
from mcpgw.recorder.replay_logs import fidelity, prune, replay_logs
from tests.conftest import ROOT, RunningGateway, free_port, misbehaving_entry, start_gateway, stop_gateway
from tests.replay.test_record_replay import calls

FIXTURE = "version: 1\nservers:\n" + misbehaving_entry("fx")


def mcpgw(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_replays_keep_their_logs_in_the_cassette_readable_by_name_or_path(tmp_path):
    cassettes = tmp_path / "cassettes"
    where = ("--cassettes-dir", str(cassettes))
    recorder = start_gateway(tmp_path, FIXTURE, "--mode", "record", "--cassette", "c")
    calls(recorder, [("fx__echo", {"message": "alpha"})])
    stop_gateway(recorder)
    recording = cassettes / "c" / "data.mdb"
    before = sha256(recording)

    sessions = (
        [("fx__echo", {"message": "alpha"})],
        [("fx__echo", {"message": "alpha"}), ("fx__echo", {"message": "gamma"})],
    )
    for index, steps in enumerate(sessions):
        player = start_gateway(tmp_path / f"p{index}", FIXTURE, "--mode", "replay", "--cassette", "c", *where)
        calls(player, steps, run_id=f"agent{index}")
        stop_gateway(player)
        assert f"call log -> {cassettes / 'c' / 'runs'}" in player.log()

    assert sha256(recording) == before  # the recorded exchanges are untouched
    assert sorted(p.name for p in cassettes.iterdir()) == ["c"]  # no replay-<time> cassettes beside it
    logs = replay_logs(cassettes / "c")
    assert len(logs) == 2 and all(p.name.endswith("-replay") for p in logs)

    # calls export: by name with --log last, by path with --log all, and the recorded log by default.
    last = mcpgw("calls", "export", "c", *where, "--log", "last")
    assert last.returncode == 0, last.stderr
    records = [json.loads(line) for line in last.stdout.splitlines()]
    assert [(r["run_id"], r["outcome"], r["source"]) for r in records] == [
        ("agent1", "ok", "recorded"),
        ("agent1", "miss", "missed"),
    ]
    every = mcpgw("calls", "export", str(cassettes / "c"), "--log", "all")
    assert len(every.stdout.splitlines()) == 1 + 1 + 2
    recorded = mcpgw("calls", "export", "c", *where)
    assert [json.loads(line)["run_id"] for line in recorded.stdout.splitlines()] == ["r1"]
    assert "also keeps 2 replay log(s)" in recorded.stderr and "--log last" in recorded.stderr
    one = mcpgw("calls", "export", "c", *where, "--log", logs[0].name[:15])  # a unique stamp prefix
    assert [json.loads(line)["run_id"] for line in one.stdout.splitlines()] == ["agent0"]
    ambiguous = mcpgw("calls", "export", "c", *where, "--log", "2")
    assert ambiguous.returncode == 2 and ambiguous.stderr.startswith("mcpgw: --log '2' matches several")

    # audit and eval take the same name (no more "cassette run1 is not a directory").
    audit = mcpgw("audit", "--cassette", "c", *where, "--log", "last", "--format", "json")
    assert audit.returncode == 0, audit.stderr
    assert {(t["tool"], t["calls"]) for t in json.loads(audit.stdout)["tools"] if t["calls"]} == {("echo", 2)}
    evaluated = mcpgw("eval", "--cassette", "c", *where, "--log", "all", "--format", "json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["inputs"]["calls"] == 4
    typo = mcpgw("audit", "--cassette", "cc", *where)
    assert typo.returncode == 2 and typo.stderr.strip() == f"mcpgw: no cassette 'cc' in {cassettes}/; did you mean c?"

    # show: per-session fidelity from those logs.
    show = mcpgw("cassette", "show", "c", *where, "--json")
    replays = json.loads(show.stdout)["replays"]
    assert [(r["mode"], r["calls"], r["hits"], r["misses"], r["diverged_lanes"], r["live"]) for r in replays] == [
        ("replay", 1, 1, 0, 0, 0),
        ("replay", 2, 1, 1, 0, 0),
    ]
    # The headline adds up the same call records as the table (it used to read only the summaries sessions
    # leave when they end: "replay runs: 0" above a table of hits and misses while a gateway ran).
    headline = json.loads(show.stdout)["replay"]
    assert (headline["runs"], headline["hits"], headline["misses"]) == (2, 2, 1)

    # ls groups the logs under their cassette; piped to a file, lines are not cut at 80 columns.
    listing = mcpgw("cassette", "ls", *where)  # --cassettes-dir after the action works too
    lines = listing.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("│ c "))
    assert f"runs/{logs[0].name}" in lines[row + 1] and f"runs/{logs[1].name}" in lines[row + 2]
    assert "2 (1 hit, 1 miss, 0 diverged lane(s), 0 live)" in lines[row + 2] and len(lines[row + 2]) > 80

    # prune: a dry run removes nothing; --keep 1 removes the older log only.
    dry = mcpgw("cassette", "prune", "c", "--keep", "1", "--dry-run", *where)
    assert f"would remove {logs[0]}" in dry.stderr and logs[0].exists()
    pruned = mcpgw("cassette", "prune", "--keep", "1", *where)
    assert pruned.returncode == 0 and not logs[0].exists() and logs[1].exists()
    assert sha256(recording) == before
    for bad, message in ((("--older-than", "7x"), "--older-than '7x'"), ((), "--keep N and/or --older-than")):
        refused = mcpgw("cassette", "prune", *bad, *where)
        assert refused.returncode == 2 and refused.stderr.startswith("mcpgw: ") and message in refused.stderr


def test_hybrid_with_a_new_cassette_starts_it(tmp_path):
    cassettes = tmp_path / "cassettes"
    hybrid = start_gateway(tmp_path, FIXTURE, "--mode", "hybrid", "--cassette", "fresh")
    first = calls(hybrid, [("fx__echo", {"message": "new"})])
    stop_gateway(hybrid)
    assert first[0]["content"][0]["text"] == "echo: new"
    assert "cassette 'fresh' does not exist yet, so this session starts it" in hybrid.log()
    show = json.loads(mcpgw("cassette", "show", "fresh", "--cassettes-dir", str(cassettes), "--json").stdout)
    assert show["tool_calls"] == {"fx:echo": 1}

    again = start_gateway(
        tmp_path / "again", FIXTURE, "--mode", "hybrid", "--cassette", "fresh", "--cassettes-dir", str(cassettes)
    )
    second = calls(again, [("fx__echo", {"message": "new"})])
    stop_gateway(again)
    assert second == first
    (log,) = replay_logs(cassettes / "fresh")
    assert fidelity(log)["hits"] == 1 and fidelity(log)["mode"] == "hybrid"


def test_fidelity_counts_and_prune_by_age(tmp_path):
    log = tmp_path / "c" / "runs" / "20200101-000000-000000-replay"
    store = CassetteStore(log)
    call_log = CallLog(store)
    for run_id, outcome, source in (
        ("a", "ok", "replay"),
        ("a", "tool_error", "replay"),
        ("a", "diverged", "replay"),
        ("b", "diverged", "replay"),
        ("b", "diverged", "replay"),
        ("c", "miss", "replay"),
        ("c", "ok", "live"),
        ("c", "rejected", None),
    ):
        call_log.append({"run_id": run_id, "outcome": outcome, "source": source})
    store.close()
    counts = fidelity(log)
    assert (counts["calls"], counts["hits"], counts["misses"], counts["diverged_lanes"], counts["live"]) == (
        8,
        2,
        1,
        2,
        1,
    )
    newer = tmp_path / "c" / "runs" / "29990101-000000-000000-replay"
    CassetteStore(newer).close()
    assert prune(tmp_path / "c", older_than=86400) == ([log], []) and not log.exists() and newer.exists()


def test_calls_refused_by_the_gateway_are_not_counted_live_in_a_replay(tmp_path):
    # An unknown name and (under enforce) invalid arguments reach no server: a replay that served
    # everything from the cassette must not report "live" calls, in either era.
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "default", cassettes / "test", ignore=shutil.ignore_patterns("runs"))
    player = start_gateway(
        tmp_path, FIXTURE, "--mode", "replay", "--validate", "enforce"
    )  # FIXTURE starts nothing in replay
    for mode in ("legacy", "2026-07-28"):
        results = calls(
            player,
            [
                ("everything__get-sum", {"a": 1, "b": 2}),
                ("everything__no-such-tool", {}),
                ("everything__get-sum", {"a": "one"}),
            ],
            mode=mode,
            run_id=f"r-{mode}",
        )
        assert results[0]["content"][0]["text"] == "The sum of 1 and 2 is 3."
        assert "Unknown tool" in results[1]["error"] and results[2]["isError"], results
    stop_gateway(player)
    (log,) = replay_logs(cassettes / "test")
    records = [
        json.loads(line)
        for line in mcpgw(
            "calls", "export", "test", "--cassettes-dir", str(cassettes), "--log", "last"
        ).stdout.splitlines()
    ]
    assert [(r["outcome"], r["source"]) for r in records] == [
        ("ok", "recorded"),
        ("rejected", None),
        ("rejected", None),
    ] * 2
    counts = fidelity(log)
    assert (counts["calls"], counts["hits"], counts["live"]) == (6, 2, 0)


def test_a_bare_serve_in_another_folder_leaves_logs_that_commands_there_find_by_name(tmp_path):
    # The README's first command, then `cassette show default` (the hint serve prints) and
    # `calls export default --log last`, run where the user is, not in the checkout.
    folder = tmp_path / "project"
    folder.mkdir()
    # mcpgw as a wheel installs it: the recorder package carries its own copy of the default cassette (setup.py), here
    # a copy made for this test, so the checkout's cassette and the logs of serves run there are never touched.
    install = tmp_path / "install"
    shutil.copytree(ROOT / "cassette", install / "cassette", ignore=shutil.ignore_patterns("__pycache__"))
    shipped = install / "cassette" / "shipped" / "default"
    shipped.mkdir(parents=True)
    shutil.copy2(ROOT / "cassettes" / "default" / "data.mdb", shipped / "data.mdb")
    env = {**os.environ, "PYTHONPATH": f"{install}{os.pathsep}{ROOT}"}  # the folder holds no cassettes/default
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpgw.cli", "serve", "--port", str(port)],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    gateway = RunningGateway(
        f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{port}", process, folder / "cassettes", log_path
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(gateway.base + "/readyz", timeout=2).status_code == 200:
                    break
            time.sleep(0.1)
        for mode in ("legacy", "2026-07-28"):
            (result,) = calls(gateway, [("everything__get-sum", {"a": 1, "b": 2})], mode=mode, run_id=f"bare-{mode}")
            assert result["content"][0]["text"] == "The sum of 1 and 2 is 3.", gateway.log()
    finally:
        stop_gateway(gateway)

    def here(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "mcpgw.cli", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
        )

    show = here("cassette", "show", "default", "--json")
    assert show.returncode == 0, show.stderr
    (session,) = json.loads(show.stdout)["replays"]
    assert (session["calls"], session["hits"], session["live"]) == (2, 2, 0)
    for name in ("default", str(shipped)):  # by name, and by the path serve printed
        last = here("calls", "export", name, "--log", "last")
        assert last.returncode == 0, last.stderr
        assert [json.loads(line)["run_id"] for line in last.stdout.splitlines()] == ["bare-legacy", "bare-2026-07-28"]
    listed = " ".join(here("cassette", "ls").stdout.split())
    assert "default (installed:" in listed and "2 (2 hit, 0 miss, 0 diverged lane(s), 0 live)" in listed, listed
    everywhere = here("cassette", "prune", "--keep", "0", "--dry-run")  # no name: every cassette ls lists, this one too
    assert everywhere.returncode == 0 and "1 replay log(s) would be removed" in everywhere.stderr, everywhere.stderr
    pruned = here("cassette", "prune", "default", "--keep", "0")
    assert pruned.returncode == 0 and "1 replay log(s) removed" in pruned.stderr, pruned.stderr
    assert replay_logs(folder / "cassettes" / "default") == [] and (shipped / "data.mdb").is_file()


def test_a_cassette_or_log_a_running_gateway_has_open_is_not_removed(tmp_path):
    """`cassette rm` removed a cassette a gateway was recording into (its calls then "committed" into
    deleted files), and `prune` the replay log a running replay wrote its call log into."""
    cassettes = tmp_path / "cassettes"
    where = ("--cassettes-dir", str(cassettes))
    recorder = start_gateway(tmp_path, FIXTURE, "--mode", "record", "--cassette", "c")
    try:  # a failed check must not leave the gateway running
        calls(recorder, [("fx__echo", {"message": "alpha"})])
        refused = mcpgw("cassette", "rm", "c", *where)
    finally:
        stop_gateway(recorder)
    assert refused.returncode == 2 and "is open in a running gateway" in refused.stderr, refused.stderr
    player = start_gateway(tmp_path / "p", FIXTURE, "--mode", "replay", "--cassette", "c", *where)
    try:
        calls(player, [("fx__echo", {"message": "alpha"})])
        (log,) = replay_logs(cassettes / "c")
        kept = mcpgw("cassette", "prune", "c", "--keep", "0", *where)
        assert kept.returncode == 0 and f"kept {log}: a running gateway is writing it" in kept.stderr, kept.stderr
        assert log.exists()
        assert mcpgw("cassette", "rm", "c", *where).returncode == 2 and (cassettes / "c").exists()
    finally:
        stop_gateway(player)
    assert mcpgw("cassette", "prune", "c", "--keep", "0", *where).returncode == 0 and not log.exists()
    assert mcpgw("cassette", "rm", "c", *where).returncode == 0 and not (cassettes / "c").exists()


def test_cassette_show_counts_a_log_cassettes_own_hits_and_misses(tmp_path):
    # Issue 44.9: the README's MCP-Bench recipe replays with --log-cassette; `cassette show` on that log said
    # "hits 0, misses 0" (it only read logs kept under runs/ and other cassettes' run summaries).
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "default", cassettes / "test", ignore=shutil.ignore_patterns("runs"))
    player = start_gateway(tmp_path, FIXTURE, "--mode", "replay", "--log-cassette", "test-replay")
    results = calls(
        player,
        [
            ("everything__get-sum", {"a": 1, "b": 2}),
            ("everything__get-sum", {"a": 1, "b": 2}),
            ("everything__get-sum", {"a": 40, "b": 2}),
        ],
        run_id="r1",
    )
    stop_gateway(player)
    assert results[0]["content"][0]["text"] == "The sum of 1 and 2 is 3."
    shown = mcpgw("cassette", "show", "test-replay", "--cassettes-dir", str(cassettes), "--json")
    assert shown.returncode == 0, shown.stderr
    show = json.loads(shown.stdout)
    assert (show["replay"]["hits"], show["replay"]["misses"]) == (2, 1), show["replay"]
    assert show["replays"][0]["log"].startswith("(this cassette")
    text = mcpgw("cassette", "show", "test-replay", "--cassettes-dir", str(cassettes)).stdout
    assert "hits 2, misses 1" in text, text
    recorded = json.loads(mcpgw("cassette", "show", "test", "--cassettes-dir", str(cassettes), "--json").stdout)
    assert (recorded["replay"]["hits"], recorded["replay"]["misses"]) == (2, 1), recorded["replay"]  # its summary


def test_fidelity_takes_the_new_answer_sources(tmp_path):
    # The call log's sources for a replay answer: "replay" (older logs), "recorded" and "equivalent" are hits,
    # "simulated" is counted apart, "missed" is a miss.
    log = tmp_path / "c" / "runs" / "20200101-000000-000000-replay"
    store = CassetteStore(log)
    call_log = CallLog(store)
    for outcome, source in (
        ("ok", "replay"),
        ("ok", "recorded"),
        ("tool_error", "equivalent"),
        ("ok", "simulated"),
        ("miss", "missed"),
        ("ok", "live"),
    ):
        call_log.append({"run_id": "a", "outcome": outcome, "source": source})
    store.close()
    counts = fidelity(log)
    assert (counts["hits"], counts["simulated"], counts["misses"], counts["live"]) == (3, 1, 1, 1)
