"""`mcpgw audit` / `eval` inputs a newcomer gets wrong: a negative --limit, one call log given twice,
a --fail-under that is not METRIC=NUMBER."""

import json

from mcpgw import cli as mcpgw_cli
from tests.evaluator import scenario
from tests.evaluator.conftest import call


def test_a_negative_limit_is_refused(tmp_path, capsys):
    files = scenario.build(tmp_path)
    assert mcpgw_cli.main(["audit", "--calls", str(files["calls"]), "--limit", "-1"]) == 2
    assert capsys.readouterr().err.strip() == "mcpgw: --limit must be a number of rows, 0 or more (0: all), not -1"


def test_the_same_record_through_two_inputs_counts_once(tmp_path, capsys):
    import mcpgw.cassette.store as store_mod
    import mcpgw.recorder.calllog as calllog

    store = store_mod.CassetteStore(tmp_path / "cassette")
    log = calllog.CallLog(store)
    for seq in (1, 2, 3):
        log.append(call("run-1", seq=seq, outcome="ok" if seq > 1 else "timeout"))
    store.close()
    exported = tmp_path / "calls.jsonl"
    with open(exported, "w", encoding="utf-8") as out:
        assert calllog.export_jsonl(tmp_path / "cassette", out) == 3
    report = tmp_path / "audit.json"
    assert (
        mcpgw_cli.main(
            [
                "audit",
                "--calls",
                str(exported),
                "--cassette",
                str(tmp_path / "cassette"),
                "--format",
                "json",
                "-o",
                str(report),
            ]
        )
        == 0
    )
    (row,) = json.loads(report.read_text())["tools"]
    assert row["calls"] == 3 and row["timeouts"] == 1  # not 6 and 2
    assert "mcpgw: dropped 3 duplicate call record(s)" in capsys.readouterr().err


def test_a_threshold_that_is_not_a_number_names_the_value_and_the_form(tmp_path, capsys):
    files = scenario.build(tmp_path)
    assert mcpgw_cli.main(["audit", "--calls", str(files["calls"]), "--fail-under", "foo"]) == 2
    assert capsys.readouterr().err.strip() == (
        "mcpgw: --fail-under 'foo': 'foo' is not a number; write METRIC=NUMBER with a number between 0 and 1, "
        "e.g. validity=0.95 (metrics: validity, success, no_error)"
    )
