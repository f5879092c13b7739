import pytest

from gateway.naming import NAME_RE, NameCollision, NamingPolicy, NameTable


def test_prefix_names_and_aliases_are_valid_and_deterministic():
    policy = NamingPolicy()
    assert policy.expose("time", "Time MCP", "get_current_time") == "time__get_current_time"
    long_name = "a_really_" + "long_" * 20 + "tool"
    alias = policy.expose("unit_converter", "Unit Converter", long_name)
    assert NAME_RE.match(alias) and len(alias) == 64
    assert alias == policy.expose("unit_converter", "Unit Converter", long_name)
    assert alias.startswith("unit_converter__a_really_long_")
    dotted = policy.expose("srv", "S", "tool.with.dots")
    assert NAME_RE.match(dotted) and dotted != policy.expose("srv", "S", "tool_with_dots")


def test_benchmark_names():
    assert NamingPolicy(mode="benchmark").expose("unit_converter", "Unit Converter", "convert") == "Unit Converter:convert"


def test_collision_names_both_sources():
    table = NameTable()
    table.add("x__y", "x", "y")
    with pytest.raises(NameCollision, match=r"x:'y'.*z:'w'"):
        table.add("x__y", "z", "w")
