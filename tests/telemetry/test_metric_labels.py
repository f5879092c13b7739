"""`/metrics` label values that come from clients are bounded (telemetry.label_values), against a real `mcpgw serve`.

Issue 50 item 11: `tool` took any name a client sent (unknown ones too) and `model` any request's model field
(misses too): 10,000 unknown names grew /metrics from 7.7 KB to 3 MB, five 1 MB names to 13 MB, for the life of the
process. Now an unknown tool counts as `(unknown)`, and a model name becomes a label value only once an exchange
with it was answered, at most MAX_MODELS of them, each at most 200 characters; the rest count as `(other)`.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from mcpgw.telemetry.label_values import OTHER, LabelValues
from tests.conftest import misbehaving_entry, start_gateway, stop_gateway
from tests.gateway.test_http_edges import ACCEPT, INIT, tool_call
from tests.llm.scripted_model import ScriptedModel

CONFIG = "version: 1\nservers:\n" + misbehaving_entry("talk")
MARKER = "Say hello"


def _samples(text: str, family: str, total: str) -> dict[tuple[str, ...], float]:
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return {tuple(sorted(s.labels.items())): s.value for s in families[family].samples if s.name == total}


def test_client_strings_do_not_grow_metrics_labels(tmp_path):
    model = ScriptedModel({("mcpbench", MARKER): [{"text": "hello"}] * 3}).start()
    try:
        gateway = start_gateway(tmp_path, CONFIG, "--mode", "live", "--metrics", "--llm-base-url", model.base_url)
        try:
            with httpx.Client(timeout=30) as client:
                opened = client.post(gateway.url, json=INIT, headers=ACCEPT)
                headers = {
                    **ACCEPT,
                    "mcp-session-id": opened.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-06-18",
                }
                client.post(
                    gateway.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
                )
                assert (
                    client.post(
                        gateway.url, json=tool_call(0, "talk__echo", {"message": "hi"}), headers=headers
                    ).status_code
                    == 200
                )
                unknown = [f"no_such_tool_{n}" for n in range(300)] + ["x" * 100_000, "y" * 100_000]
                for n, name in enumerate(unknown, 1):
                    answer = client.post(gateway.url, json=tool_call(n, name, {}), headers=headers)
                    assert answer.status_code == 200 and "error" in answer.text, answer.text[:300]
                chat = {"messages": [{"role": "user", "content": MARKER}]}
                answered = [
                    client.post(gateway.base + "/v1/chat/completions", json={**chat, "model": name})
                    for name in ("model-a", "model-b", "m" * 5_000)
                ]  # the third is answered, but too long
                assert [r.status_code for r in answered] == [200, 200, 200], [r.text[:200] for r in answered]
                missed = [
                    client.post(
                        gateway.base + "/v1/chat/completions",
                        json={"model": f"stranger-{n}", "messages": [{"role": "user", "content": f"q{n}"}]},
                    )
                    for n in range(100)
                ] + [
                    client.post(
                        gateway.base + "/v1/chat/completions",
                        json={"model": "z" * 1_000_000, "messages": [{"role": "user", "content": "big"}]},
                    )
                ]
                assert all(r.status_code >= 400 for r in missed)
                scraped = client.get(gateway.base + "/metrics").text
        finally:
            stop_gateway(gateway)
    finally:
        model.stop()
    assert len(scraped.encode()) < 40_000, len(scraped.encode())
    tools = _samples(scraped, "mcpgw_tool_calls", "mcpgw_tool_calls_total")
    by_tool: dict[str, float] = {}
    for labels, value in tools.items():
        by_tool[dict(labels)["tool"]] = by_tool.get(dict(labels)["tool"], 0) + value
    assert by_tool == {"echo": 1, "(unknown)": len(unknown)}, by_tool
    models = _samples(scraped, "mcpgw_model_exchanges", "mcpgw_model_exchanges_total")
    by_model: dict[str, float] = {}
    for labels, value in models.items():
        by_model[dict(labels)["model"]] = by_model.get(dict(labels)["model"], 0) + value
    assert by_model == {"model-a": 1, "model-b": 1, OTHER: 1 + len(missed)}, by_model


def test_a_label_keeps_at_most_its_limit_of_values():
    values = LabelValues(2)
    assert [values.value(name) for name in ("a", "b", "c", "a")] == ["a", "b", OTHER, "a"]
    assert values.value("d", vouched=False) == OTHER and values.seen == {"a", "b"}
    assert LabelValues(5).value("n" * 201) == OTHER
