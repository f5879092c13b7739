import pytest

from mcpgw.gateway.tools.naming import NAME_RE, NameCollision, NameTable, NamingPolicy


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
    assert (
        NamingPolicy(mode="benchmark").expose("unit_converter", "Unit Converter", "convert") == "Unit Converter:convert"
    )


def test_collision_names_both_sources():
    table = NameTable()
    table.add("x__y", "x", "y")
    with pytest.raises(NameCollision, match=r"x:'y'.*z:'w'"):
        table.add("x__y", "z", "w")


def test_bare_names_keep_upstream_names_and_prefix_only_shared_ones():
    from mcpgw.gateway.tools.catalog import ServerCatalog, build_catalog
    from mcpgw.gateway.tools.validation import ValidatorCache
    from mcpgw.lock.config import ServerSpec

    def server(tools, prompts=()):
        return ServerCatalog(
            {"capabilities": {}, "serverInfo": {"name": "s", "version": "1"}},
            tools=[{"name": n, "inputSchema": {"type": "object"}} for n in tools],
            prompts=[{"name": n} for n in prompts],
        )

    alpha, beta = ServerSpec("alpha", "stdio", "x"), ServerSpec("beta", "stdio", "x")
    servers = [(alpha, server(["add", "sub"], ["greet"])), (beta, server(["add", "mul"], ["greet", "bye"]))]
    catalog = build_catalog(servers, NamingPolicy(mode="bare"), ValidatorCache(), 1)
    assert sorted(catalog.tools) == ["alpha__add", "beta__add", "mul", "sub"]
    assert catalog.tools["sub"].name == "sub" and catalog.tools["beta__add"].server == "beta"
    assert sorted(catalog.prompts) == ["alpha__greet", "beta__greet", "bye"]
    assert any("'add' is offered by alpha and beta" in p and "alpha__add, beta__add" in p for p in catalog.problems)
    assert any("prompt 'greet'" in p for p in catalog.problems)
    # Either start order gives the same names: the shared ones are prefixed for both servers.
    assert sorted(build_catalog(servers[::-1], NamingPolicy(mode="bare"), ValidatorCache(), 1).tools) == sorted(
        catalog.tools
    )
    # One server alone: every name stays bare, nothing reported.
    single = build_catalog(servers[:1], NamingPolicy(mode="bare"), ValidatorCache(), 1)
    assert sorted(single.tools) == ["add", "sub"] and not single.problems
    # The other modes ignore sharing.
    assert NamingPolicy().expose("alpha", "A", "add", shared=True) == "alpha__add"
