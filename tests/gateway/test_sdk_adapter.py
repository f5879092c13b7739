"""The SDK's private surface the gateway uses is all in gateway.sessions.sdk_adapter, and the installed SDK still has it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mcp.server.streamable_http_manager as manager_module
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.runner import ServerRunner
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcpgw.cassette.store import CassetteStore
from mcpgw.gateway.endpoints.http_app import build_http_app
from mcpgw.gateway.mcp_server import build_server
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.sessions import sdk_adapter
from mcpgw.gateway.specs.settings import Settings
from mcpgw.recorder.calllog import CallLog

GATEWAY = Path(sdk_adapter.__file__).parents[1]  # gateway/: every room (sdk_adapter lives in gateway/sessions/)


def test_the_installed_sdk_has_every_private_name_the_adapter_uses():
    assert sdk_adapter.missing() == []


def test_the_contract_check_notices_a_renamed_private_method(monkeypatch):
    monkeypatch.delattr(StreamableHTTPServerTransport, "_check_content_type")
    assert sdk_adapter.missing() == ["StreamableHTTPServerTransport._check_content_type: no such method"]


def test_no_module_but_the_adapter_names_an_sdk_private():
    names = {name for _, name, _ in sdk_adapter.PRIVATE}
    pattern = re.compile(r"\.(" + "|".join(re.escape(n) for n in names) + r")\b")
    modules = [p for p in GATEWAY.rglob("*.py") if p.name != "sdk_adapter.py"]
    # the scan sees every room, not one folder of it (it once read 8 of 78 modules after the rooms move)
    rooms = {p.relative_to(GATEWAY).parts[0] for p in modules if len(p.relative_to(GATEWAY).parts) > 1}
    assert {"sessions", "endpoints", "routing", "upstreams", "errors"} <= rooms, rooms
    assert (GATEWAY / "mcp_server.py") in modules
    users = sorted(str(p.relative_to(GATEWAY)) for p in modules if pattern.search(p.read_text()))
    assert users == []


def test_building_the_http_app_patches_nothing_in_the_sdk(tmp_path):
    before = manager_module.StreamableHTTPServerTransport
    router = Router([], {}, Settings(), CallLog(CassetteStore(tmp_path / "c")))
    build_http_app(router, build_server(router), "127.0.0.1")
    assert manager_module.StreamableHTTPServerTransport is before is StreamableHTTPServerTransport


# Tool results, some of the plain shape the adapter shapes itself, most near it (extra keys, other blocks,
# non-str text, non-bool isError, None values), so both sides of its test are exercised.
_text = st.one_of(st.text(max_size=6), st.integers(), st.none())
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "image"]), "text": st.text(max_size=3)},
        optional={"annotations": st.none(), "_meta": st.just({"k": 1}), "data": st.text(max_size=2)},
    ),
)
_results = st.fixed_dictionaries(
    {"content": st.lists(_block, max_size=3)},
    optional={
        "isError": st.one_of(st.booleans(), st.none(), st.integers(0, 1)),
        "structuredContent": st.just({"a": 1}),
        "_meta": st.just({"m": 1}),
        "extra": st.integers(),
    },
)


@settings(max_examples=400, deadline=None)
@given(result=_results, version=st.sampled_from(sorted(HANDSHAKE_PROTOCOL_VERSIONS)))
def test_results_shaped_in_the_adapter_are_what_the_sdk_makes_of_them(tmp_path_factory, result, version):
    router = Router([], {}, Settings(), CallLog(CassetteStore(tmp_path_factory.mktemp("c"))))
    server = build_server(router)
    connection = sdk_adapter._StubConnection()
    ours = _outcome(lambda: sdk_adapter.serialize_result(server, connection, "tools/call", version, result))
    theirs = _outcome(lambda: ServerRunner(server, connection, None)._serialize("tools/call", version, result))
    assert ours == theirs  # the same keys in the same order (the same bytes), or the same refusal


def test_the_plain_shape_is_the_common_one():
    assert sdk_adapter.plain_text_result({"content": [{"type": "text", "text": "a"}], "isError": False}) == {
        "content": [{"text": "a", "type": "text"}],
        "isError": False,
    }
    assert sdk_adapter.plain_text_result({"content": [{"type": "text", "text": "a"}], "structuredContent": {}}) is None


def _outcome(shape):
    try:
        return "shaped", json.dumps(shape())
    except Exception as exc:  # noqa: BLE001 - a result the SDK refuses is refused alike
        return "refused", type(exc).__name__


@pytest.mark.anyio
async def test_a_sessions_idle_countdown_stops_while_any_of_its_requests_is_served():
    """As the SDK's own `handle_request` keeps it: suspended from the first request in flight to the last, then
    restarted from the last one's end (the hot lane's bookkeeping, on an SDK transport's own idle scope)."""
    import math

    import anyio

    transport = StreamableHTTPServerTransport(mcp_session_id="s", idle_timeout=30)
    with anyio.CancelScope() as idle:
        transport.idle_scope = idle
        idle.deadline = anyio.current_time() + 30
        sdk_adapter.request_began(transport)
        sdk_adapter.request_began(transport)  # a second request of the session, at once
        assert idle.deadline == math.inf and transport._requests_in_flight == 2
        sdk_adapter.request_ended(transport, 30)
        assert idle.deadline == math.inf  # one still in flight
        await anyio.sleep(0.05)
        sdk_adapter.request_ended(transport, 30)
        assert transport._requests_in_flight == 0
        assert abs(idle.deadline - (anyio.current_time() + 30)) < 0.01


def test_a_running_countdown_is_moved_on_only_past_a_hundredth_of_its_length_and_a_request_run_at_once_leaves_it(
    monkeypatch,
):
    """A request answered in its own turn (suspend=False) does not suspend the countdown; one that then waits does
    (`request_waits`). At its end a running countdown is moved on only when it has run more than a hundredth of its
    length (a second at most), so a session is closed after 99% to 100% of its idle time. Time passes on a fake
    clock: the event loop's, moved on by hand (the loop's clock reads time.monotonic, as request_ended does)."""
    import asyncio
    import math
    import time

    import anyio

    async def go():
        assert asyncio.get_running_loop().time.__func__ is asyncio.BaseEventLoop.time  # which reads time.monotonic
        real, passed = time.monotonic, [0.0]
        monkeypatch.setattr(
            time, "monotonic", lambda: real() + passed[0]
        )  # anyio's clock (the loop's) and request_ended's
        transport = StreamableHTTPServerTransport(mcp_session_id="s", idle_timeout=10)
        with anyio.CancelScope() as idle:
            transport.idle_scope = idle
            armed = idle.deadline = anyio.current_time() + 10
            sdk_adapter.request_began(transport, suspend=False)
            assert idle.deadline == armed  # not suspended: nothing can run out while it is answered
            sdk_adapter.request_ended(transport, 10)
            assert idle.deadline == armed  # run for less than 0.1 s (10 s / 100): left as it was
            passed[0] += 0.11  # past a hundredth of 10 s
            sdk_adapter.request_began(transport, suspend=False)
            sdk_adapter.request_ended(transport, 10)
            assert abs(idle.deadline - (anyio.current_time() + 10)) < 0.01  # run for more: restarted
            sdk_adapter.request_began(transport, suspend=False)
            sdk_adapter.request_waits(transport)  # it waits after all
            assert idle.deadline == math.inf
            sdk_adapter.request_ended(transport, 10)
            assert abs(idle.deadline - (anyio.current_time() + 10)) < 0.01
            # a long idle time: moved on once it has run a second, not 1% of it
            long = StreamableHTTPServerTransport(mcp_session_id="t", idle_timeout=600)
            with anyio.CancelScope() as other:
                long.idle_scope = other
                armed = other.deadline = anyio.current_time() + 600
                passed[0] += 0.99  # short of a second (more than 1% of 600 s is 6 s)
                sdk_adapter.request_began(long, suspend=False)
                sdk_adapter.request_ended(long, 600)
                assert other.deadline == armed
                passed[0] += 0.02  # past a second
                sdk_adapter.request_began(long, suspend=False)
                sdk_adapter.request_ended(long, 600)
                assert abs(other.deadline - (anyio.current_time() + 600)) < 0.01

    anyio.run(go, backend_options={"loop_factory": asyncio.new_event_loop})  # a loop whose clock can be set
