"""Issue 54 item 3: commands that read a whole cassette go through it one record at a time.

A test that a command's memory stays flat as records grow would be flaky; instead each command here reads a
cassette whose records are watched: every record the store yields is tracked by a weak reference, and the
store refuses to yield the next one while more than a few earlier ones are still alive (kept in a list by the
command). The numbers (time and peak memory at 10k, 100k and 1M records) are bench/bench_big_cassettes.py's.
"""

from __future__ import annotations

import json
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcpgw.cassette.store as store_mod
from mcpgw import cli as mcpgw_cli
from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.record_numbers import seq_key
from tests.evaluator.conftest import call

RECORDS = 300
STILL_HELD = 3  # a consumer's loop variable and the record it is working on: never more


class Watched(dict[str, Any]):
    """A record a weak reference can follow (a plain dict cannot be)."""


@pytest.fixture
def watched_store(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """CassetteStore.items yields Watched records and fails when a consumer keeps them; returns the number of
    records yielded per scan of calls or exchanges, for the test to check every record was read."""
    scans: list[int] = []
    real_items = store_mod.CassetteStore.items

    def items(self: store_mod.CassetteStore, db: str) -> Iterator[tuple[bytes, Any]]:
        alive: list[weakref.ref[Watched]] = []
        count = 0
        for key, value in real_items(self, db):
            alive = [ref for ref in alive if ref() is not None]
            if len(alive) > STILL_HELD:
                raise AssertionError(f"{len(alive)} {db} records read earlier are still held: a list of them is built")
            record = Watched(value) if isinstance(value, dict) else value
            if isinstance(record, Watched):
                alive.append(weakref.ref(record))
            count += 1
            yield key, record
        if db in ("calls", "exchanges"):
            scans.append(count)

    monkeypatch.setattr(store_mod.CassetteStore, "items", items)
    return scans


def big_cassette(path: Path) -> Path:
    """RECORDS tool calls and exchanges (a few to a name nothing resembles) over 10 runs."""
    store = store_mod.CassetteStore(path)
    batch: list[tuple[str, bytes, Any]] = []
    for i in range(1, RECORDS + 1):
        run, unknown = f"run-{i % 10}", i % 50 == 0
        record = call(run, seq=i, latency_ms=float(i), outcome="timeout" if i % 7 == 0 else "ok")
        if unknown:
            record.update(known_tool=False, server=None, tool=None, exposed_name="nothing_like_it", outcome="rejected")
        exchange = {
            "key": f"k{i}",
            "server": "weather",
            "method": "tools/call",
            "params": {"name": "forecast", "arguments": {"city": f"c{i}"}},
            "result": {"content": [{"type": "text", "text": "sunny"}]},
            "seq": i,
        }
        batch += [("calls", seq_key(i), record), ("exchanges", seq_key(i), exchange)]
    store.put_many(batch)
    store.close()
    return path


def test_audit_of_a_cassette_aggregates_record_by_record(tmp_path: Path, watched_store: list[int]) -> None:
    cassette = big_cassette(tmp_path / "big")
    out = tmp_path / "audit.json"
    assert mcpgw_cli.main(["audit", "--cassette", str(cassette), "--format", "json", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    rows = {row["exposed_name"]: row for row in report["tools"]}
    assert rows["weather__forecast"]["calls"] == RECORDS - RECORDS // 50
    assert rows["weather__forecast"]["timeouts"] == sum(1 for i in range(1, RECORDS + 1) if i % 7 == 0 and i % 50)
    assert rows["nothing_like_it"]["calls"] == RECORDS // 50 and rows["nothing_like_it"]["rejected"] == RECORDS // 50
    assert rows["nothing_like_it"]["examples"]["unknown_name"]["seq"] == 50  # the first such call
    assert watched_store == [RECORDS]


def test_cassette_show_counts_record_by_record(
    tmp_path: Path, watched_store: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    big_cassette(tmp_path / "big")
    assert mcpgw_cli.main(["cassette", "show", "big", "--cassettes-dir", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["exchanges"] == RECORDS and summary["calls"] == RECORDS
    assert summary["tool_calls"] == {"weather:forecast": RECORDS}
    assert sorted(watched_store) == [RECORDS, RECORDS, RECORDS]  # exchanges, calls, and the calls' fidelity


@pytest.mark.parametrize("command", [["calls", "export"], ["cassette", "export"]])
def test_exports_write_record_by_record(tmp_path: Path, watched_store: list[int], command: list[str]) -> None:
    big_cassette(tmp_path / "big")
    out = tmp_path / "out.jsonl"
    assert mcpgw_cli.main([*command, "big", "--cassettes-dir", str(tmp_path), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len([line for line in lines if '"run_id"' in line]) == RECORDS
    assert RECORDS in watched_store


def test_the_watch_catches_a_list(tmp_path: Path, watched_store: list[int]) -> None:
    """The fixture does fail a reader that keeps what it reads, as the gateway's replay load does."""
    cassette = Cassette(big_cassette(tmp_path / "big"), create=False, readonly=True)
    try:
        with pytest.raises(AssertionError, match="still held"):
            cassette.load()
    finally:
        cassette.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_a_long_scan_gives_back_the_pages_it_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's pages a scan went through leave the process's resident set as it goes (cassette.mapped_pages),
    so reading a cassette of gigabytes does not make a process gigabytes big."""
    from mcpgw.cassette.mapped_pages import mappings_of

    monkeypatch.setattr(store_mod, "RELEASE_EVERY", 100, raising=False)
    store = store_mod.CassetteStore(tmp_path / "c")
    store.put_many([("calls", seq_key(i), {"seq": i, "pad": "x" * 4000}) for i in range(1, 2001)])  # ~8 MB
    store.close()
    store = store_mod.CassetteStore(tmp_path / "c", create=False, readonly=True)
    try:
        scan = store.items("calls")
        assert sum(1 for _ in zip(range(1999), scan, strict=False)) == 1999  # still inside the read transaction
        resident = _resident_kib(mappings_of(tmp_path / "c" / "data.mdb"))
        assert resident < 2048, f"{resident} KiB of the 8 MB file still resident after the scan"
        scan.close()
    finally:
        store.close()


def _resident_kib(ranges: list[tuple[int, int]]) -> int:
    """Rss of this process's mappings that start at one of `ranges` (from /proc/self/smaps)."""
    starts = {start for start, _ in ranges}
    total, counting = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=1)[0]
        if "-" in head and not head.endswith(":"):
            counting = int(head.split("-")[0], 16) in starts
        elif counting and head == "Rss:":
            total += int(line.split()[1])
    return total


def test_eval_holds_a_compact_log(tmp_path: Path) -> None:
    """`mcpgw eval` holds the whole log (it groups calls by run); each run id, server and tool name in it is one
    string shared by its records, not one per record, and the fields it never reads are left out."""
    from argparse import Namespace

    from mcpgw.evaluator.call_log_input import load_calls

    big_cassette(tmp_path / "big")
    args = Namespace(calls=None, cassette="big", cassettes_dir=str(tmp_path), log=None)
    records = load_calls(args)
    assert len(records) == RECORDS
    first, same_run = records[0], records[10]
    assert first["run_id"] == same_run["run_id"] == "run-1"
    assert first["run_id"] is same_run["run_id"] and first["exposed_name"] is same_run["exposed_name"]
    assert "cassette_key" not in first and first["seq"] == 1  # a field the evaluation never reads is left out
    assert "result_digest" in first  # read by eval --noise
