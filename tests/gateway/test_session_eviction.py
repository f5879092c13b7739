"""Which session the per-client cap closes, against a real `mcpgw serve` (gateway.sessions.sessions.SessionAdmission).

Issue 50 item 14: with 200 idle sessions from one address, clients that open a session per call got 404 on 54 of 200
calls: the cap closed sessions that had made no request yet first, so a session was closed between its
`initialize` and its first request. Now the session idle longest is closed, and a session younger than a few
seconds that has made no request is never closed for room (503 when nothing else may be closed).
"""

from __future__ import annotations

import httpx

from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_http_edges import ACCEPT, INIT, tool_call

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("probe")


def _initialize(client: httpx.Client, url: str) -> httpx.Response:
    return client.post(url, json=INIT, headers=ACCEPT)


def _headers(session_id: str) -> dict[str, str]:
    return {**ACCEPT, "mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}


def _open(client: httpx.Client, url: str) -> str:
    response = _initialize(client, url)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def _call(client: httpx.Client, url: str, session_id: str, message: str) -> int:
    return client.post(
        url, json=tool_call(1, "probe__echo", {"message": message}), headers=_headers(session_id)
    ).status_code


def test_the_cap_closes_the_longest_idle_session_never_one_between_initialize_and_its_first_request(tmp_path):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live", "--max-sessions-per-client", "3")
    try:
        with httpx.Client(timeout=30) as client:
            url = gateway.url
            old = []
            for n in range(3):  # the address's sessions, each used once, then idle
                session = _open(client, url)
                assert _call(client, url, session, f"old {n}") == 200
                old.append(session)
            fresh = _open(client, url)  # room made: the longest idle (old[0]) closed
            # A second client's initialize while the first one's session has made no request yet: closed for room
            # was that brand-new session (404 on its first call); now the longest idle (old[1]).
            other = _open(client, url)
            assert _call(client, url, fresh, "first call of a new session") == 200
            # old[2] and then `fresh` (used now, the longest idle) make room; then only new sessions are left.
            newer = [_open(client, url), _open(client, url)]
            refused = _initialize(client, url)
            assert refused.status_code == 503 and refused.headers.get("retry-after") == "5", refused.text
            assert "mcp-session-id" not in refused.headers
            still_open = {
                name: _call(client, url, sid, name)
                for name, sid in {"other": other, "newer 0": newer[0], "newer 1": newer[1]}.items()
            }
            closed = {
                name: _call(client, url, sid, name)
                for name, sid in {"old 0": old[0], "old 1": old[1], "old 2": old[2], "fresh": fresh}.items()
            }
            evicted = gateway.status()["http"]["sessions"]["evicted"]
    finally:
        stop_gateway(gateway)
    assert still_open == {"other": 200, "newer 0": 200, "newer 1": 200}
    assert closed == {"old 0": 404, "old 1": 404, "old 2": 404, "fresh": 404}
    assert evicted == 4
