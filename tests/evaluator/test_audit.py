import pytest

from mcpgw.evaluator.audit import audit_calls, check_thresholds, parse_thresholds, percentile, sort_tools
from tests.evaluator.conftest import call


def bad(keyword, *more):
    errors = [{"path": "$.x", "message": "m", "keyword": k} for k in (keyword, *more)]
    return {"valid": False, "errors": errors}


def records():
    return [
        call(seq=0, latency_ms=10.0),
        call(seq=1, latency_ms=30.0, validation=bad("required"), outcome="rejected"),
        call(seq=2, latency_ms=20.0, validation=bad("type", "type", "enum"), outcome="rejected"),
        call(seq=3, latency_ms=40.0, outcome="tool_error", is_error=True),
        call(seq=4, latency_ms=1000.0, outcome="timeout"),
        call(seq=5, latency_ms=None, outcome="miss"),
        call(seq=6, server="time", tool="now", exposed_name="time__now", latency_ms=5.0),
        call(seq=7, known_tool=False, server=None, tool=None, exposed_name="weather__forcast", outcome="rejected"),
        call(seq=8, known_tool=False, server=None, tool=None, exposed_name="weather__forcast", outcome="rejected"),
        call(seq=9, known_tool=False, server=None, tool=None, exposed_name="zzzzzz", outcome="rejected"),
    ]


def test_per_tool_counts():
    report = audit_calls(records())
    rows = {(t["server"], t["tool"]): t for t in report["tools"]}
    f = rows[("weather", "forecast")]
    assert f["calls"] == 6 and f["invalid"] == 2
    assert f["invalid_by_keyword"] == {"enum": 1, "required": 1, "type": 1}  # a call counts once per keyword
    assert f["near_misses"] == 2 and f["near_miss_names"] == {"weather__forcast": 2}
    assert (f["is_error"], f["timeouts"], f["misses"], f["ok"]) == (1, 1, 1, 1)
    assert f["error_rate"] == pytest.approx(1 / 6) and f["validity"] == pytest.approx(4 / 6)
    # latencies 10, 20, 30, 40, 1000 (one missing): nearest rank
    assert f["p50_ms"] == 30.0 and f["p99_ms"] == 1000.0
    assert f["examples"]["invalid:required"]["seq"] == 1 and f["examples"]["invalid:type"]["seq"] == 2
    assert f["examples"]["near_miss"]["exposed_name"] == "weather__forcast"
    assert {"is_error", "timeout", "miss"} <= set(f["examples"])
    stray = rows[("(unknown)", "zzzzzz")]
    assert stray["calls"] == 1 and stray["known"] is False and stray["validity"] is None
    totals = report["totals"]
    assert totals["calls"] == 7 and totals["invalid"] == 2 and totals["unknown_name_calls"] == 3
    assert totals["validity"] == pytest.approx(5 / 7)


def test_catalog_names_attract_near_misses_without_calls():
    report = audit_calls(
        [call(known_tool=False, tool=None, server=None, exposed_name="maps__geocod", outcome="rejected")],
        catalog=[("maps", "geocode", "maps__geocode")],
    )
    row = next(t for t in report["tools"] if t["tool"] == "geocode")
    assert row["calls"] == 0 and row["near_misses"] == 1 and row["validity"] is None


def test_near_misses_look_on_the_named_server_first():
    catalog = [("a", "look_up_item", "a__look_up_item"), ("b", "lookup", "b__lookup")]

    def unknown(name):
        return call(known_tool=False, tool=None, server=None, exposed_name=name, outcome="rejected")

    # "b__lookup" is closer overall, but the call named server a, whose tool is close enough.
    report = audit_calls([unknown("a__lookup"), unknown("c__lookup")], catalog=catalog)
    rows = {t["tool"]: t for t in report["tools"]}
    assert rows["look_up_item"]["near_miss_names"] == {"a__lookup": 1}
    assert rows["lookup"]["near_miss_names"] == {"c__lookup": 1}  # unknown server: closest of all names


def test_percentile_nearest_rank():
    values = sorted(float(v) for v in range(1, 101))
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0 and percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0 and percentile([], 50) is None


def test_sorting():
    tools = audit_calls(records())["tools"]
    by_calls = sort_tools(tools, "calls")
    assert [t["calls"] for t in by_calls] == sorted((t["calls"] for t in tools), reverse=True)
    by_validity = sort_tools(tools, "validity", descending=False)
    assert by_validity[0]["tool"] == "forecast" and by_validity[-1]["validity"] is None  # no value: last
    assert [t["tool"] for t in sort_tools(tools, "name")] == ["zzzzzz", "now", "forecast"]
    with pytest.raises(ValueError, match="cannot sort by"):
        sort_tools(tools, "colour")


def test_thresholds():
    assert parse_thresholds("validity=0.9, success=0.5") == {"validity": 0.9, "success": 0.5}
    assert parse_thresholds("0.8") == {"validity": 0.8}
    for bad_spec in ("speed=0.9", "validity=high", "validity=1.5"):
        with pytest.raises(ValueError):
            parse_thresholds(bad_spec)
    report = audit_calls(records())
    failures = check_thresholds(report, {"validity": 0.9})
    assert any(f.startswith("weather/forecast: validity 0.667 < 0.9") for f in failures)
    assert any(f.startswith("all tools: validity") for f in failures)
    assert not any("time/now" in f for f in failures)
    assert check_thresholds(report, {"validity": 0.5}) == []
