"""The fast path's shortcut past the SDK's request validation never lets through what the SDK would refuse.

`fast_path.plainly_valid` skips `mcp_types.methods.validate_client_request` for params it recognises at a
glance; every such params must pass the installed SDK's own validation, at every handshake version.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcpgw.gateway.endpoints.fast_path import HOT_METHODS
from mcpgw.gateway.sessions.request_params import plainly_valid

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
call_params = st.fixed_dictionaries(
    {"name": st.text(max_size=8)}, optional={"arguments": st.dictionaries(st.text(max_size=5), values, max_size=4)}
)
any_params = (
    st.none()
    | st.just({})
    | call_params
    | st.dictionaries(st.sampled_from(["name", "arguments", "cursor", "_meta", "task"]), values, max_size=3)
)


@settings(max_examples=400, deadline=None)
@given(
    method=st.sampled_from(sorted(HOT_METHODS)),
    params=any_params,
    version=st.sampled_from(sorted(HANDSHAKE_PROTOCOL_VERSIONS)),
)
def test_what_it_waves_through_the_sdk_accepts(method, params, version):
    if plainly_valid(method, params):
        methods.validate_client_request(method, version, params)  # raises if the SDK would refuse


def test_it_waves_through_the_usual_requests_and_asks_about_the_rest():
    assert plainly_valid("tools/call", {"name": "echo", "arguments": {"message": "hi"}})
    assert (
        plainly_valid("tools/call", {"name": "echo"})
        and plainly_valid("tools/list", None)
        and plainly_valid("ping", {})
    )
    assert not plainly_valid("tools/call", {"name": 3}) and not plainly_valid(
        "tools/call", {"name": "x", "arguments": []}
    )
    assert not plainly_valid("tools/call", {"name": "x", "_meta": {}}) and not plainly_valid(
        "tools/list", {"cursor": "c"}
    )
