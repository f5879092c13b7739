from mcpgw.cassette.state import StateModel
from mcpgw.gateway.upstreams.stdio_transport import _too_large_error
from mcpgw.replay.compare import Rules, compare_results, parse_rules


def request_key(server: str, method: str, params: dict, history: str = "") -> str:
    return StateModel(server, tracked=True).keyed(method, params, history).key  # the key of every kind of exchange


def test_keys_ignore_meta_order_and_integral_floats():
    a = request_key("s", "tools/call", {"name": "t", "arguments": {"x": 1, "y": [2.0]}, "_meta": {"progressToken": 5}})
    b = request_key("s", "tools/call", {"arguments": {"y": [2], "x": 1.0}, "name": "t"})
    assert a == b
    assert a != request_key("s", "tools/call", {"name": "t", "arguments": {"x": 1.5, "y": [2]}})
    assert a != request_key("s", "tools/call", {"name": "t", "arguments": {"x": 1, "y": [2]}}, history="h")


def test_ignore_rules_cover_json_inside_text():
    rec = {"content": [{"type": "text", "text": '{"t": 1, "v": "a"}'}]}
    live = {"content": [{"type": "text", "text": '{"t": 2, "v": "a"}'}]}
    rules = Rules.for_tool(parse_rules([{"paths": ["$.content[*].text"]}]), "x")
    assert compare_results(rec, live, rules)[1] == []
    narrow = Rules.for_tool(parse_rules([{"tool": "x", "paths": ["$.content[0].text:json.v"]}]), "x")
    assert [d.path for d in compare_results(rec, live, narrow)[1]] == ["$.content[0].text:json.t"]


def test_oversized_response_id_is_the_top_level_one():
    ts_style = _too_large_error(
        b'{"result":{"content":[{"id":1,"text":"', b'xxxx"}]},"jsonrpc":"2.0","id":7}', 10, limit=8
    )
    assert ts_style["id"] == 7 and ts_style["error"]["code"] < 0
    py_style = _too_large_error(b'{"jsonrpc":"2.0","id":"r-9","result":{"id":1,', b'xx"}}', 10, limit=8)
    assert py_style["id"] == "r-9"
    assert _too_large_error(b'{"result":{"id":1,', b'xx"}}', 10, limit=8) is None  # no top-level id: nothing to answer


def test_a_miss_shows_the_nearest_recordings_arguments_whole():
    from mcpgw.cassette.misses import describe_miss, nearest

    query = "SELECT name, population FROM cities WHERE country = 'France' ORDER BY population DESC LIMIT 10"
    recorded = [{"method": "tools/call", "params": {"name": "sql", "arguments": {"query": query, "limit": 10}}}]
    near = nearest("tools/call", {"name": "sql", "arguments": {"query": query, "limit": 5}}, recorded)
    text = describe_miss("db", "tools/call", {"name": "sql"}, near, stateful=False)
    assert "limit: recorded 10, asked 5" in text
    assert query in text  # the field the difference does not name is readable in full, not cut at 60 characters


def test_two_long_strings_that_part_late_are_shown_where_they_differ():
    """Cut at the same 60 characters, "WHERE country = 'France'" and "... 'Spain'" read alike (issue 22)."""
    from mcpgw.cassette.misses import differences

    head = "SELECT name, population FROM cities WHERE continent = 'Europe' AND country = "
    (diff,) = differences({"query": head + "'Spain' LIMIT 10"}, {"query": head + "'France' LIMIT 10"})
    assert "'France' LIMIT 10" in diff and "'Spain' LIMIT 10" in diff, diff
    assert diff.count(f"(from character {len(head) + 1 - 20})") == 2  # both start with a quote
    # Short values, or values that part early, are shown from their start as before.
    assert differences({"limit": 5}, {"limit": 10}) == ["limit: recorded 10, asked 5"]
    assert differences({"q": "Spain" + head}, {"q": "France" + head})[0].startswith('q: recorded "France')
