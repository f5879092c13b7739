"""`mcpgw calls export --format otlp`: spans of a cassette's call log delivered to a collector (decoded from OTLP
protobuf), and a clear error, not a traceback, when the URL is missing or wrong or the collector is down."""

from __future__ import annotations

from pathlib import Path

from mcpgw.cassette.store import CassetteStore
from mcpgw.cli import main
from mcpgw.recorder.calllog import CallLog
from tests.conftest import free_port
from tests.telemetry.receiver import Receiver
from tests.telemetry.test_spans import model_record, tool_record


def cassette(cassettes: Path) -> None:
    store = CassetteStore(cassettes / "run", create=True)
    log = CallLog(store)
    for record in (
        model_record("t1", "2026-11-27T09:00:00.000+00:00"),
        tool_record("t1", "2026-11-27T09:00:00.100+00:00"),
        model_record("t2", "2026-11-27T09:00:05.000+00:00"),
        # the same lane an hour later: another run of it, so another trace (as live after its idle time)
        tool_record("t1", "2026-11-27T10:00:00.000+00:00"),
    ):
        log.append(record)
    store.close()


def test_a_call_log_sent_as_traces_with_its_recorded_times(tmp_path, capsys):
    cassette(tmp_path)
    with Receiver() as receiver:
        assert (
            main(["calls", "export", "run", "--cassettes-dir", str(tmp_path), "--format", "otlp", "--to", receiver.url])
            == 0
        )
        receiver.wait_for(lambda r: len(r.spans) == 7)
    assert "sent 4 call record(s)" in capsys.readouterr().err
    roots = sorted((s for s in receiver.spans if s["parent_id"] is None), key=lambda s: s["start"])
    assert [r["name"] for r in roots] == ["run t1", "run t2", "run t1"]
    assert len({r["trace_id"] for r in roots}) == 3
    first = [s["name"] for s in receiver.spans if s["parent_id"] == roots[0]["span_id"]]
    assert sorted(first) == ["chat scripted-1", "tools/call time__convert"]


def test_missing_or_wrong_url_and_a_dead_collector_are_clear_errors(tmp_path, capsys):
    cassette(tmp_path)
    base = ["calls", "export", "run", "--cassettes-dir", str(tmp_path), "--format", "otlp"]
    assert main(base) == 2
    assert "--format otlp needs --to URL" in capsys.readouterr().err
    assert main([*base, "--to", "localhost:4318"]) == 2
    assert "--format otlp needs --to URL" in capsys.readouterr().err
    assert main([*base, "--to", f"http://127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert "did not take 1 batch(es) of spans" in err and "Traceback" not in err and "calls are not affected" not in err
