"""Every concrete upstream is an `Upstream`: it has each member the Protocol names, with a compatible
signature, and the optional capabilities (`PerRunInstances`, `ReplayCounters`) are found where they exist.

The check reads the Protocol itself, so a member added to it is checked on every upstream at once; a
member the router reaches for that no Protocol declares, or a method it declares that the router never calls, fails
`test_the_protocol_names_what_the_router_uses`."""

from __future__ import annotations

import inspect
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.recording_upstream import RecordingUpstream
from mcpgw.cassette.redaction import Redactor
from mcpgw.gateway.errors.tree import ReplayMiss
from mcpgw.gateway.routing.router import Caller, Router
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.tools.catalog import ServerCatalog
from mcpgw.gateway.upstreams import upstream as upstream_module
from mcpgw.gateway.upstreams.isolation import PerRunUpstream
from mcpgw.gateway.upstreams.live import LiveUpstream
from mcpgw.gateway.upstreams.upstream import HandlerUpstream, PerRunInstances, ReplayCounters, Upstream
from mcpgw.lock.config import ServerSpec
from mcpgw.lock.install_lookup import CacheInstalls
from mcpgw.recorder.calllog import CallLog
from mcpgw.replay.cassette_upstream import CassetteUpstream


def protocol_members(protocol: type) -> dict[str, Any]:
    """The members a Protocol declares in its own body: annotated attributes, properties and methods."""
    members: dict[str, Any] = {name: "attribute" for name in protocol.__dict__.get("__annotations__", {})}
    for name, value in protocol.__dict__.items():
        if isinstance(value, property):
            members[name] = "attribute"  # read-only: a plain attribute or a property satisfies it
        elif inspect.isfunction(value) and not name.startswith("_"):
            members[name] = value
    return members


def conformance_problems(instance: Any, protocol: type) -> list[str]:
    """What `instance` lacks to be a `protocol`; empty when it conforms."""
    problems = []
    for name, wanted in protocol_members(protocol).items():
        if not hasattr(instance, name):
            problems.append(f"no {name}")
            continue
        if wanted == "attribute":
            continue
        have = getattr(type(instance), name, None)
        if not inspect.isfunction(have):
            problems.append(f"{name} is not a method")
            continue
        if inspect.iscoroutinefunction(have) != inspect.iscoroutinefunction(wanted):
            problems.append(f"{name} must {'' if inspect.iscoroutinefunction(wanted) else 'not '}be async")
        problems += [f"{name}: {p}" for p in _signature_problems(inspect.signature(wanted), inspect.signature(have))]
    return problems


def _signature_problems(wanted: inspect.Signature, have: inspect.Signature) -> list[str]:
    """`have` accepts every call `wanted` allows: same names and kinds, positional ones in the same order,
    a default wherever the Protocol has one, and a default on every parameter the Protocol lacks."""
    problems = []
    want_params = list(wanted.parameters.values())[1:]  # without self
    have_params = {p.name: p for p in list(have.parameters.values())[1:]}
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    want_order = [p.name for p in want_params if p.kind in positional]
    have_order = [name for name, p in have_params.items() if p.kind in positional][: len(want_order)]
    if want_order != have_order:
        problems.append(f"positional parameters {have_order}, the Protocol has {want_order}")
    for param in want_params:
        mine = have_params.get(param.name)
        if mine is None:
            problems.append(f"no parameter {param.name!r}")
        elif mine.kind != param.kind:
            problems.append(
                f"parameter {param.name!r} is {mine.kind.description}, the Protocol's is {param.kind.description}"
            )
        elif param.default is not inspect.Parameter.empty and mine.default is inspect.Parameter.empty:
            problems.append(f"parameter {param.name!r} needs a default, as the Protocol's has")
    for name, mine in have_params.items():
        extra = name not in wanted.parameters and mine.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        )
        if extra and mine.default is inspect.Parameter.empty:
            problems.append(f"extra parameter {name!r} without a default: the router would not pass it")
    return problems


def make_catalog() -> ServerCatalog:
    return ServerCatalog(
        {"capabilities": {"tools": {}}, "serverInfo": {"name": "double", "version": "1"}},
        tools=[{"name": "count", "inputSchema": {"type": "object"}}],
    )


def counting_server(name: str) -> HandlerUpstream:
    """One instance of a stateful server: `count` answers how often this instance was called."""
    seen = [0]

    async def handler(method: str, params: dict[str, Any]) -> dict[str, Any]:
        seen[0] += 1
        return {"content": [{"type": "text", "text": str(seen[0])}]}

    return HandlerUpstream(name, handler, make_catalog())


@pytest.fixture
def upstreams(tmp_path: Path) -> Iterator[dict[str, Upstream]]:
    """One of each concrete upstream, built as the composition root builds them (none started)."""
    per_run = PerRunUpstream(
        ServerSpec("perrun", "stdio", "x"),
        lambda spec, catalog: counting_server(spec.id),
        CacheInstalls(),
        idle_timeout=60,
        start_timeout=5,
    )
    cassette = Cassette(tmp_path / "c")
    built: dict[str, Upstream] = {  # typed: mypy checks each class against the Protocol here
        "handler": counting_server("handler"),
        "live": LiveUpstream(ServerSpec("live", "stdio", "x"), Settings(), CacheInstalls()),
        "perrun": per_run,
        "recording": RecordingUpstream(
            counting_server("recording"), cassette, tracked=True, redact=Redactor([]), lock_digest="d"
        ),
        "cassette": CassetteUpstream("cassette", {"catalog": make_catalog().as_dict()}, []),
    }
    yield built
    cassette.close()
    shutil.rmtree(per_run._catalog_dir, ignore_errors=True)  # made at construction; removed by run(), not run here


class Watched:
    """An upstream seen through a window: every member the router reads, calls or sets on it is noted."""

    def __init__(self, inner: Any, seen: set[str]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_seen", seen)

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            self._seen.add(name)
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._seen.add(name)
        setattr(self._inner, name, value)


@pytest.mark.anyio
async def test_the_protocol_names_what_the_router_uses(upstreams):
    """Run a router over every kind of upstream, each behind a `Watched` window, through start, settle, calls,
    a miss, /status and close: each member it reaches for is one the Protocols declare (`Upstream`, or an optional
    capability it checks for), and each method of `Upstream` is one it calls (none is dead weight)."""
    seen: dict[str, set[str]] = {name: set() for name in upstreams if name != "live"}
    watched = {name: Watched(upstreams[name], seen[name]) for name in seen}
    router = Router(
        [ServerSpec(name, "stdio", "x") for name in watched],
        watched,
        Settings(),
        CallLog(upstreams["recording"].cassette.store, Redactor([])),
    )
    with anyio.fail_after(20):
        async with router.running():
            await router.until_settled()
            for name in ("handler", "perrun", "recording"):
                await router.call_tool({"name": f"{name}__count"}, Caller("a", tagged=True))
            with pytest.raises(ReplayMiss):
                await router.call_tool({"name": "cassette__count"}, Caller("a", tagged=True))
            router.status()
    declared = set(protocol_members(Upstream))
    # the optional capabilities: every other Protocol of the upstream module (the router checks for them)
    capabilities = [
        c
        for c in vars(upstream_module).values()
        if inspect.isclass(c)
        and c is not Upstream
        and getattr(c, "_is_protocol", False)
        and c.__module__ == upstream_module.__name__
    ]
    assert {PerRunInstances, ReplayCounters} <= set(capabilities)
    optional = set().union(*(protocol_members(c) for c in capabilities))
    undeclared = {name: sorted(used - declared - optional) for name, used in seen.items() if used - declared - optional}
    assert undeclared == {}, f"the router uses members no Protocol declares: {undeclared}"
    # Each method is one the router calls (an attribute such as `name` may be there for other readers).
    methods = {name for name, kind in protocol_members(Upstream).items() if kind != "attribute"}
    assert methods - seen["handler"] == set(), "Upstream declares methods the router never calls"


def test_the_window_notes_what_is_reached_for():
    seen: set[str] = set()
    window = Watched(counting_server("w"), seen)
    assert window.name == "w"
    window.extra = 1
    assert seen == {"name", "extra"}


def test_every_concrete_upstream_satisfies_the_protocol(upstreams):
    assert {type(u) for u in upstreams.values()} == {
        HandlerUpstream,
        LiveUpstream,
        PerRunUpstream,
        RecordingUpstream,
        CassetteUpstream,
    }
    for name, upstream in upstreams.items():
        assert conformance_problems(upstream, Upstream) == [], name
        assert upstream.name == name


def test_optional_capabilities_are_found_only_where_they_exist(upstreams):
    assert {n for n, u in upstreams.items() if isinstance(u, PerRunInstances)} == {"perrun"}
    assert {n for n, u in upstreams.items() if isinstance(u, ReplayCounters)} == {"cassette"}
    assert conformance_problems(upstreams["perrun"], PerRunInstances) == []
    assert conformance_problems(upstreams["cassette"], ReplayCounters) == []


def test_the_check_finds_a_missing_member_and_an_incompatible_signature():
    class Incomplete:  # request is not async, wait_ready lost its timeout, aclose is gone, run needs an extra argument
        name = "x"
        status = catalog = None

        async def run(self, flavour, *, task_status=None): ...

        async def wait_ready(self): ...

        def request(self, method, params, options=None): ...

    problems = conformance_problems(Incomplete(), Upstream)
    assert "no aclose" in problems
    assert "request must be async" in problems
    assert "wait_ready: no parameter 'timeout'" in problems
    assert "run: extra parameter 'flavour' without a default: the router would not pass it" in problems
    assert not any(p.startswith(("name", "status", "catalog")) for p in problems)


@pytest.mark.anyio
async def test_the_router_runs_each_kind_through_the_protocol_alone(upstreams):
    """Start, settle, call, report and close every kind through one Router: `isolation: run` shows its
    instances in /status, each lane gets an instance of its own, and replay counts its hits and misses."""
    specs = [ServerSpec(name, "stdio", "x") for name in upstreams if name != "live"]
    chosen = {name: u for name, u in upstreams.items() if name != "live"}  # live: a real server, tested elsewhere
    router = Router(specs, chosen, Settings(), CallLog(upstreams["recording"].cassette.store, Redactor([])))

    async def go() -> tuple[dict[str, Any], list[str]]:
        with anyio.fail_after(20):
            async with router.running():
                await router.until_settled()
                texts = []
                for run_id in ("a", "a", "b"):
                    result = await router.call_tool({"name": "perrun__count"}, Caller(run_id, tagged=True))
                    texts.append(result["content"][0]["text"])
                with pytest.raises(ReplayMiss):
                    await router.call_tool({"name": "cassette__count"}, Caller("a", tagged=True))
                return router.status(), texts

    status, texts = await go()
    assert texts == ["1", "2", "1"]  # lane b starts from nothing
    servers = status["servers"]
    assert servers["perrun"]["run_instances"] == 2
    assert all("run_instances" not in servers[n] for n in ("handler", "recording", "cassette"))
    assert {n: servers[n]["state"] for n in servers} == {
        "handler": "ready",
        "perrun": "ready",
        "recording": "ready",
        "cassette": "ready",
    }
    assert status["tools"] == 4 and status["settled"] is True
    assert upstreams["cassette"].misses == {"count": 1}
    assert status["calls_served"] == 4
    assert upstreams["handler"].status.state == "stopped"  # closed with the router
