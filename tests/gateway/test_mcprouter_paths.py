"""Issue 44, item 18: mcprouter's proxy URL shapes, `/mcp/<server>` and `/sse/<server>`, are aliases of the
per-server endpoints `/servers/<id>/mcp` and `/servers/<id>/sse`: a client configured for mcprouter works by
changing only the host. Same names, calls, lanes, token and 404 for an unknown id; the call log names the
path as called. Real parts: mcp-server-time (uvx) behind a real `mcpgw serve`, the SDK's HTTP and SSE clients.
"""

from __future__ import annotations

import httpx
import pytest

from mcpgw.gateway.endpoints.per_server import split_path
from mcpgw.recorder.calllog import iter_calls
from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_per_server import JSON_ONLY, run, sdk_calls, sse_calls, tool_call

TOKEN_VAR = "MCPGW_TEST_ROUTER_PATHS_TOKEN"
TOKEN = "router-paths-token-0123456789"
CONFIG = """version: 1
servers:
  time:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
  other:
    command: uvx
    args: ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
"""
TOKYO = ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
ENDPOINTS = ("/mcp", "/sse", "/sse/messages")


def test_the_aliases_map_to_the_per_server_endpoints_only():
    assert split_path("/mcp/time", ENDPOINTS) == ("time", "/mcp")
    assert split_path("/sse/time", ENDPOINTS) == ("time", "/sse")
    assert split_path("/sse/time/messages", ENDPOINTS) == ("time", "/sse/messages")
    assert split_path("/servers/time/mcp", ENDPOINTS) == ("time", "/mcp")
    for shared_or_other in (
        "/mcp",
        "/sse",
        "/sse/messages",
        "/mcp/time/messages",
        "/mcp/a/b",
        "/v1/time",
        "/mcpx/time",
    ):
        assert split_path(shared_or_other, ENDPOINTS) is None, shared_or_other


def test_the_aliases_want_the_token_and_name_the_nearest_ids(tmp_path, monkeypatch):
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    gateway = start_gateway(
        tmp_path, "version: 1\nservers:\n" + misbehaving_entry("fx"), "--auth-token-env", TOKEN_VAR, token=TOKEN
    )
    try:
        check_token_and_ids(gateway)
    finally:
        stop_gateway(gateway)


def check_token_and_ids(gateway) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/mcp/fx", "/sse/fx", "/sse/fx/messages", "/mcp/nobody"):
        for method in ("GET", "POST"):
            refused = httpx.request(
                method, gateway.base + path, json=tool_call("echo", {}), headers=JSON_ONLY, timeout=10
            )
            assert refused.status_code == 401, (path, method, refused.text)
    missing = httpx.post(
        gateway.base + "/mcp/fz", json=tool_call("echo", {}), headers={**JSON_ONLY, **auth}, timeout=10
    )
    assert missing.status_code == 404 and "no server 'fz' behind this gateway; nearest: fx" in missing.text
    with httpx.Client(timeout=60) as fresh:  # a sessionless one-shot call, as on /servers/fx/mcp
        ok = fresh.post(
            gateway.base + "/mcp/fx",
            json=tool_call("echo", {"message": "via mcprouter's URL"}),
            headers={**JSON_ONLY, **auth},
        ).json()
    assert ok["result"]["content"][0]["text"] == "echo: via mcprouter's URL"


@pytest.mark.real  # starts a registry package (uvx)
def test_mcprouter_urls_serve_one_server_as_its_per_server_endpoints_do(tmp_path):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "record", "--cassette", "rec")
    try:
        # Streamable HTTP with a session (an SDK client), and a sessionless one-shot call, at /mcp/<id>.
        names, results = run(lambda: sdk_calls(gateway.base + "/mcp/time?run=r-mcp", "legacy", [TOKYO]))
        assert sorted(names) == ["convert_time", "get_current_time"]
        assert "21:00:00+09:00" in results[0]["content"][0]["text"]
        one_shot = httpx.post(
            gateway.base + "/mcp/time?run=r-one", json=tool_call(*TOKYO), headers=JSON_ONLY, timeout=60
        ).json()
        assert "21:00:00+09:00" in one_shot["result"]["content"][0]["text"]
        # HTTP+SSE at /sse/<id>: its stream names /sse/<id>/messages, where the calls go.
        names, results = run(lambda: sse_calls(gateway.base + "/sse/time?run=r-sse", [TOKYO]))
        assert sorted(names) == ["convert_time", "get_current_time"]
        assert "21:00:00+09:00" in results[0]["content"][0]["text"]
        # The per-server endpoint, for comparison: the same call, the same cassette key.
        run(lambda: sdk_calls(gateway.base + "/servers/time/mcp?run=r-servers", "legacy", [TOKYO]))
    finally:
        stop_gateway(gateway)
    logged = {r["run_id"]: r for r in iter_calls(gateway.cassettes / "rec")}
    assert {run_id: (r["server"], r["tool"], r["endpoint"], r["outcome"]) for run_id, r in logged.items()} == {
        "r-mcp": ("time", "convert_time", "/mcp/time", "ok"),
        "r-one": ("time", "convert_time", "/mcp/time", "ok"),
        "r-sse": ("time", "convert_time", "/sse/time", "ok"),
        "r-servers": ("time", "convert_time", "/servers/time/mcp", "ok"),
    }
    assert len({r["cassette_key"] for r in logged.values()}) == 1
