"""MCP-Bench tasks run with `mcpgw run` (a scripted model) through a recording gateway that exports traces to a
real Arize Phoenix; the spans read back through Phoenix's API: one trace per task, the model's and the tools'
spans in the call log's order with their attributes, no key in any of them. Then `calls export --format otlp`
sends the same cassette to Phoenix again (another project) and the span trees are the same."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import datetime

import pytest

from mcpgw.cli import main
from mcpgw.recorder.calllog import iter_calls
from mcpgw.runs.gateway_process import GatewayProcess
from tests.conftest import ROOT
from tests.llm.scripted_model import ScriptedModel
from tests.runs.scripts import script
from tests.runs.test_end_to_end import single_server_tasks
from tests.telemetry.phoenix import Phoenix

pytestmark = pytest.mark.real

TASKS = ["unit_converter_000", "medical_calculator_001", "time_mcp_000"]  # a malformed call; a 500 retried; two calls
SERVERS = ["unit_converter", "medical_calculator", "time_mcp"]
MODEL_KEY = "sk-model-9f8e7d6c5b4a3210"


def when(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def trees(spans: list[dict]) -> dict[str, list[tuple]]:
    """root name -> its children, each (name, kind, start, end, attributes), by start time; roots' own times first."""
    by_id = {s["context"]["span_id"]: s for s in spans}
    out: dict[str, list[tuple]] = defaultdict(list)
    for span in spans:
        parent = by_id.get(span["parent_id"]) if span["parent_id"] else None
        if parent is None:
            out[span["name"]].insert(0, ("root", span["start_time"], span["end_time"]))
        else:
            out[parent["name"]].append(
                (
                    span["name"],
                    span["span_kind"],
                    when(span["start_time"]),
                    when(span["end_time"]),
                    json.dumps(span["attributes"], sort_keys=True),
                )
            )
    return {name: [items[0]] + sorted(items[1:], key=lambda c: (c[2], c[3], c[0])) for name, items in out.items()}


def test_tasks_as_traces_in_phoenix_live_and_exported_alike(tmp_path, capsys, monkeypatch):
    tasks = single_server_tasks(tmp_path)
    cassettes = tmp_path / "cassettes"
    phoenix = Phoenix(tmp_path / "phoenix")
    model = ScriptedModel(script()).start()
    try:
        monkeypatch.setenv("MCPGW_TEST_MODEL_KEY", MODEL_KEY)
        gateway = GatewayProcess(
            [
                "--mode",
                "record",
                "--config",
                str(ROOT / "servers.lock.yaml"),
                "--servers",
                *SERVERS,
                "--cassettes-dir",
                str(cassettes),
                "--cassette",
                "rec",
                "--llm-base-url",
                model.base_url,
                "--llm-key-env",
                "MCPGW_TEST_MODEL_KEY",
                "--otlp-endpoint",
                phoenix.url,
            ],
            tmp_path / "gateway.log",
            env=dict(os.environ),
        )
        try:
            ids = [arg for task in TASKS for arg in ("--task-id", task)]
            assert (
                main(
                    [
                        "run",
                        str(tasks),
                        "--model",
                        "scripted-1",
                        "--strategy",
                        "tc",
                        "--run-prefix",
                        "tc/",
                        "--answers",
                        str(tmp_path / "answers.jsonl"),
                        "--concurrency",
                        "3",
                        "--max-rounds",
                        "6",
                        *ids,
                        "--gateway",
                        gateway.base,
                    ]
                )
                == 0
            ), capsys.readouterr().err
        finally:
            gateway.stop()
        assert any(MODEL_KEY in (seen.get("authorization") or "") for seen in model.seen)  # the key was in use

        records = list(iter_calls(cassettes / "rec"))
        runs = sorted({r["run_id"] for r in records})
        assert runs == sorted(f"tc/{task}" for task in TASKS)
        live = phoenix.wait_spans(len(records) + len(runs))
        assert len(live) == len(records) + len(runs)
        assert MODEL_KEY not in json.dumps(live)

        # one trace per task: its root, and every span of it under that root
        roots = {s["name"]: s for s in live if s["parent_id"] is None}
        assert sorted(roots) == [f"run {run}" for run in runs]
        for run in runs:
            trace_id = roots[f"run {run}"]["context"]["trace_id"]
            mine = [s for s in live if s["context"]["trace_id"] == trace_id and s["parent_id"]]
            assert all(s["parent_id"] == roots[f"run {run}"]["context"]["span_id"] for s in mine)
            logged = sorted((r for r in records if r["run_id"] == run), key=lambda r: r["started_at"])
            seen = sorted(mine, key=lambda s: s["start_time"])
            # model and tool spans in the call log's order (by start: model turn, its tool calls, next turn ...)
            assert [("LLM" if r["server"] == "@model" else "TOOL") for r in logged] == [s["span_kind"] for s in seen]
            assert [r["exposed_name"] for r in logged if r["server"] != "@model"] == [
                s["attributes"]["gen_ai.tool.name"] for s in seen if s["span_kind"] == "TOOL"
            ]
            for span in seen:
                a = span["attributes"]
                if span["span_kind"] == "LLM":
                    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "scripted-1"
                    assert a["mcpgw.outcome"] == "recorded" and a["mcpgw.cassette_key"]
                    if a["http.response.status_code"] == 200:
                        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.response.finish_reasons"]
                else:
                    assert a["mcp.method.name"] == "tools/call" and a["gen_ai.operation.name"] == "execute_tool"
                    assert (
                        a["mcpgw.answer_source"] in ("live", "none")
                        and (a["mcpgw.answer_source"] == "none" or a["mcpgw.cassette_key"])
                        and a["mcpgw.verdict"]
                    )
                    assert "gen_ai.tool.call.arguments" not in a  # content is opt-in
        statuses = [s["attributes"].get("http.response.status_code") for s in live if s["span_kind"] == "LLM"]
        assert 500 in statuses  # medical_calculator_001's failed turn is in its trace

        # the recorded cassette sent again, after the fact, into another Phoenix project: the same trees
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "openinference.project.name=exported")
        assert (
            main(["calls", "export", "rec", "--cassettes-dir", str(cassettes), "--format", "otlp", "--to", phoenix.url])
            == 0
        )
        exported = phoenix.wait_spans(len(live), project="exported")
        assert trees(exported) == trees(live)
    finally:
        model.stop()
        phoenix.stop()
