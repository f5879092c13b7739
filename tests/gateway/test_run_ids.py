"""One reading of a run id (gateway.sessions.run_ids), against a real `mcpgw serve`, over raw HTTP.

Issue 50 item 8: `/runs/A/...?run=B` and `/runs/A/...` with `X-Run-Id: B` were answered from lane A; a raw UTF-8
`X-Run-Id: ü` was read as latin-1 (another lane than `/runs/%C3%BC/`); `?run=a+b` was `a b` where the path and the
header gave `a+b`; a tagged id could name an untagged client's lane. The hot lane (a session's calls on /mcp) and
the pipeline read run ids alike: the header cases go the hot lane's way, the path cases the pipeline's.
"""

from __future__ import annotations

import httpx

from mcpgw.recorder.calllog import iter_calls
from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_http_edges import ACCEPT, INIT, tool_call

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("probe")


def _session(client: httpx.Client, url: str) -> dict[str, str]:
    response = client.post(url, json=INIT, headers=ACCEPT)
    assert response.status_code == 200, response.text
    headers = {**ACCEPT, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers).status_code
        == 202
    )
    return headers


def test_a_run_id_reads_one_way_everywhere_and_two_that_differ_are_refused(tmp_path):
    gateway = start_gateway(tmp_path, CONFIG, "--mode", "live")
    refused: dict[str, str] = {}
    try:
        with httpx.Client(timeout=30) as client:
            session = _session(client, gateway.url)
            served_before = gateway.status().get("hot_lane", {}).get("served", 0)

            def call(case: str, path: str = "/mcp", run_header: bytes | None = None) -> httpx.Response:
                headers = list(session.items()) + ([("x-run-id", run_header)] if run_header is not None else [])
                return client.post(
                    gateway.base + path, json=tool_call(case, "probe__echo", {"message": case}), headers=headers
                )

            answered = {
                # the same run, named in one place or several alike
                "path a+b": call("path a+b", "/runs/a+b/mcp"),
                "query a%2Bb": call("query a%2Bb", "/mcp?run=a%2Bb"),
                "header a+b": call("header a+b", run_header=b"a+b"),
                "path ü": call("path ü", "/runs/%C3%BC/mcp"),
                "query ü": call("query ü", "/mcp?run=%C3%BC"),
                "header ü": call("header ü", run_header="ü".encode()),  # raw UTF-8, as sent by clients that allow it
                "all three A": call("all three A", "/runs/A/mcp?run=A", run_header=b"A"),
            }
            for case, response in answered.items():
                assert response.status_code == 200 and "error" not in response.json(), (case, response.text)
            hot_served = gateway.status().get("hot_lane", {}).get("served", 0) - served_before
            for case, response in {
                "path A, query B": call("x1", "/runs/A/mcp?run=B"),
                "path A, header B": call("x2", "/runs/A/mcp", run_header=b"B"),
                "query A, header B": call("x3", "/mcp?run=A", run_header=b"B"),
                "a raw + in the query": call("x4", "/mcp?run=a+b"),
                "header not UTF-8": call("x5", run_header=b"\xfc"),
                "an untagged client's lane": call("x6", run_header=b"default/client-0123456789abcdef"),
                "an untagged session's lane, in the path": call("x7", "/runs/default%2Fsession-abc/mcp"),
            }.items():
                assert response.status_code == 400, (case, response.status_code, response.text)
                refused[case] = response.json()["error"]["message"]
    finally:
        stop_gateway(gateway)
    assert refused["path A, query B"] == "two runs named: /runs/A/ and ?run=B: name one (or the same in both)"
    assert refused["path A, header B"] == "two runs named: /runs/A/ and X-Run-Id: B: name one (or the same in both)"
    assert refused["query A, header B"] == "two runs named: ?run=A and X-Run-Id: B: name one (or the same in both)"
    assert "%2B for a plus, %20 for a space" in refused["a raw + in the query"]
    assert refused["header not UTF-8"] == "the X-Run-Id header is not UTF-8"
    assert "untagged client's lane" in refused["an untagged client's lane"]
    assert "untagged client's lane" in refused["an untagged session's lane, in the path"]
    assert hot_served >= 4, hot_served  # the header and query cases on /mcp went the hot lane's way
    lanes = {r["arguments"]["message"]: r["lane"] for r in iter_calls(gateway.cassettes / "test")}
    assert {case: lanes.get(case) for case in answered} == {
        "path a+b": "a+b",
        "query a%2Bb": "a+b",
        "header a+b": "a+b",
        "path ü": "ü",
        "query ü": "ü",
        "header ü": "ü",
        "all three A": "A",
    }
    assert not {f"x{n}" for n in range(1, 8)} & set(lanes)  # no refused call reached a lane
