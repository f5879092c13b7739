from mcpgw.evaluator.judges.trace import call_line, estimate_rounds, list_tools, render_calls, render_trace
from tests.evaluator.conftest import call


def at(second, length=1.0, **fields):
    start = f"2025-01-01T00:00:{second:06.3f}+00:00"
    end = f"2025-01-01T00:00:{second + length:06.3f}+00:00"
    return call(started_at=start, ended_at=end, **fields)


def test_call_line_shows_name_arguments_outcome_and_problems():
    line = call_line(
        call(validation={"valid": False, "errors": [{"path": "$.city", "keyword": "type"}]}, outcome="rejected"), 3
    )
    assert line == '3. weather__forecast({"city": "Oslo"}) -> rejected [invalid arguments: $.city: type]'
    assert call_line(call(is_error=True), 1).endswith("-> tool_error")


def test_long_traces_keep_head_and_tail():
    calls = [call(seq=i, arguments={"i": i, "pad": "x" * 200}) for i in range(200)]
    text = render_trace(calls, budget=4000)
    assert len(text) <= 4000
    assert text.startswith('1. weather__forecast({"i": 0') and '{"i": 199' in text.splitlines()[-1]
    assert "calls omitted" in text
    assert render_trace([]) == "(no tool calls)"


def test_rounds_from_overlapping_calls():
    # a parallel batch of two, then one call, then two more overlapping ones
    calls = [at(0, 2), at(1, 0.5), at(3), at(5, 1), at(5.5, 1)]
    assert estimate_rounds(calls) == 3
    assert estimate_rounds([call(started_at=None), call()]) == 2  # no timing: one call per round


def test_tool_listing():
    assert "weather__forecast" in list_tools([call(), call(known_tool=False, exposed_name="bogus")])
    assert "bogus" not in list_tools([call(known_tool=False, exposed_name="bogus")])
    catalog = [{"exposed_name": "maps__geocode", "description": "Find coordinates"}]
    assert list_tools([call()], catalog) == "- maps__geocode: Find coordinates"
    assert render_calls([{"tool_name": "a", "tool_parameters": {"x": 1}}]) == '1. a({"x": 1})'
