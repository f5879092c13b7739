"""Answer sources in one piece: equivalent calls, the simulator (a scripted OpenAI-compatible endpoint over
real HTTP), who may be simulated, the overlay's rules, and the labels. End to end: test_new_model.py."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.equivalence import has_defaults, normalise
from mcpgw.cassette.recording_upstream import RecordingUpstream  # noqa: F401  (the entries below have its shape)
from mcpgw.cassette.state import StateModel
from mcpgw.gateway.errors.tree import CassetteError, GatewayError, ReplayDiverged, ReplayMiss
from mcpgw.gateway.specs.settings import ModelSettings, Settings, SimulatorSettings
from mcpgw.gateway.upstreams.upstream import CallOptions
from mcpgw.overlay import check_answer_settings, open_overlay
from mcpgw.replay.answer_sources import META_KEY, Simulation
from mcpgw.replay.cassette_upstream import CassetteUpstream
from mcpgw.replay.simulator import Simulator, SimulatorConfig, as_tool_result, output_problem
from tests.llm.scripted_model import ScriptedModel

BMI = {
    "name": "bmi",
    "description": "Body mass index",
    "annotations": {"readOnlyHint": True},
    "inputSchema": {
        "type": "object",
        "required": ["weight", "height"],
        "properties": {
            "weight": {"type": "number"},
            "height": {"type": "number"},
            "unit": {"type": "string", "default": "cm"},
            "options": {"type": "object", "properties": {"round": {"type": "integer", "default": 2}}},
        },
    },
}
CONVERT = {
    "name": "convert",
    "description": "Convert a temperature",
    "inputSchema": {"type": "object", "properties": {"value": {"type": "number"}}},
    "outputSchema": {"type": "object", "required": ["celsius"], "properties": {"celsius": {"type": "number"}}},
}
ADD = {
    "name": "add",
    "description": "Adds a line to the notebook (changes state)",
    "inputSchema": {
        "type": "object",
        "properties": {"line": {"type": "string"}, "pin": {"type": "boolean", "default": False}},
    },
}
READ = {
    "name": "read",
    "description": "Reads the notebook",
    "annotations": {"readOnlyHint": True},
    "inputSchema": {"type": "object", "properties": {}},
}


def catalog(*tools: dict) -> dict:
    return {"catalog": {"init": {"serverInfo": {"name": "t"}}, "tools": list(tools)}}


def entries(server: str, tracked: bool, calls: list[tuple[str, dict, dict]], read_only=frozenset()) -> list[dict]:
    """Recorded exchanges, keyed as recording keys them (one lane)."""
    model, history, out = StateModel(server, tracked, frozenset(read_only)), "", []
    for name, arguments, result in calls:
        params = {"name": name, "arguments": arguments}
        call = model.keyed("tools/call", params, history)
        out.append(
            {
                "key": call.key,
                "base": call.base,
                "history": call.history,
                "changes_state": call.changes_state,
                "server": server,
                "method": "tools/call",
                "params": params,
                "result": result,
                "lane": "A",
            }
        )
        history = call.history_after()
    return out


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def ask(upstream: CassetteUpstream, calls: list[tuple[str, dict]], lane: str = "B") -> list[tuple[str, Any]]:
    async def run() -> list[tuple[str, Any]]:
        out = []
        for name, arguments in calls:
            try:
                reply = await upstream.request(
                    "tools/call", {"name": name, "arguments": arguments}, CallOptions(lane=lane)
                )
                out.append((reply.source, reply.result))
            except (ReplayMiss, ReplayDiverged) as exc:
                out.append((exc.answer_source, type(exc).__name__ + ": " + exc.message))
        return out

    return anyio.run(run)


# -- equivalent calls ------------------------------------------------------------------------------------


def test_normalise_fills_declared_defaults_at_every_plain_level_and_nothing_else():
    schema = BMI["inputSchema"]
    assert normalise({"weight": 70, "height": 175}, schema) == {"weight": 70, "height": 175, "unit": "cm"}
    assert normalise({"weight": 70, "height": 175, "options": {}}, schema)["options"] == {"round": 2}
    assert normalise({"weight": 70, "unit": "in"}, schema)["unit"] == "in"  # given values are never touched
    choice = {"type": "object", "anyOf": [{"properties": {"x": {"default": 1}}}]}
    assert not has_defaults(choice) and normalise({}, choice) == {}  # a default under a choice may not apply
    assert has_defaults(schema) and not has_defaults(READ["inputSchema"])


def test_a_default_spelled_out_or_left_out_is_equivalent_and_a_different_value_is_not():
    recorded = entries("calc", False, [("bmi", {"weight": 70, "height": 175}, text("22.9"))])
    upstream = CassetteUpstream("calc", catalog(BMI), recorded, tracked=False)
    answers = ask(
        upstream,
        [
            ("bmi", {"weight": 70, "height": 175}),
            ("bmi", {"height": 175, "weight": 70.0, "unit": "cm"}),
            ("bmi", {"weight": 70, "height": 175, "unit": "in"}),
        ],
    )
    assert [source for source, _ in answers] == ["recorded", "equivalent", "missed"]
    assert answers[1][1] == text("22.9")
    assert "unit" in answers[2][1] and "was not in the recording" in answers[2][1]


def test_an_equivalent_state_changing_call_moves_the_lane_on_as_the_recording_did():
    recorded = entries(
        "notes",
        True,
        [("add", {"line": "x", "pin": False}, text("added")), ("read", {}, text("x"))],
        read_only={"read"},
    )
    upstream = CassetteUpstream("notes", catalog(ADD, READ), recorded, tracked=True)
    answers = ask(upstream, [("add", {"line": "x"}), ("read", {})])
    assert answers == [("equivalent", text("added")), ("recorded", text("x"))]


# -- the simulator ----------------------------------------------------------------------------------------


def simulated_upstream(
    tmp_path: Path,
    model: ScriptedModel,
    tool: dict,
    recorded: list[dict],
    *,
    tracked=False,
    timeout: float = 10,
    label: bool = False,
) -> tuple[CassetteUpstream, Cassette, Simulation]:
    overlay = Cassette(tmp_path / "overlay")
    simulation = Simulation(Simulator(SimulatorConfig(model.base_url, "sim-1", None, timeout)), overlay, lambda v: v)
    upstream = CassetteUpstream(
        "srv", catalog(tool, READ), recorded, tracked=tracked, simulation=simulation, label_in_result=label
    )
    return upstream, overlay, simulation


def structured(celsius: Any) -> dict:
    body = {"celsius": celsius}
    return {"text": json.dumps({"content": [{"type": "text", "text": json.dumps(body)}], "structuredContent": body})}


def test_a_simulated_answer_is_labelled_kept_in_the_overlay_and_asked_again_replays_it(tmp_path):
    recorded = entries(
        "srv", False, [("convert", {"value": 32}, {**text('{"celsius": 0}'), "structuredContent": {"celsius": 0}})]
    )
    model = ScriptedModel({("mcpbench", "Convert a temperature"): [structured(15.6)]}).start()
    try:
        upstream, overlay, simulation = simulated_upstream(tmp_path, model, CONVERT, recorded, label=True)
        answers = ask(upstream, [("convert", {"value": 60}), ("convert", {"value": 60})])
        asked = [s["body"]["messages"][1]["content"] for s in model.seen]
    finally:
        model.stop()
    assert [source for source, _ in answers] == ["simulated", "simulated"]
    assert answers[0][1]["structuredContent"] == {"celsius": 15.6} and answers[0][1]["_meta"][META_KEY] == "simulated"
    assert len(asked) == 1  # simulated once: the second ask replays it
    assert '"value": 32' in asked[0] and '"celsius": 0' in asked[0]  # the nearest recording was shown, with its result
    kept = [e for e in overlay.load().by_server["srv"]]
    assert [(e["source"], e["simulator"]["model"], e["simulator"]["shown"]) for e in kept] == [
        ("simulated", "sim-1", [recorded[0]["key"]])
    ]
    assert simulation.made == 1 and "_meta" not in kept[0]["result"]  # the label is never written into the answer


def test_an_answer_that_fails_the_output_schema_twice_is_a_miss_with_the_reason(tmp_path):
    model = ScriptedModel(
        {("mcpbench", "Convert a temperature"): [structured("warm"), {"text": "about 15 degrees"}]}
    ).start()
    try:
        upstream, overlay, _ = simulated_upstream(tmp_path, model, CONVERT, [])
        ((source, answer),) = ask(upstream, [("convert", {"value": 60})])
        requests = len(model.seen)
    finally:
        model.stop()
    assert source == "missed" and answer.startswith("ReplayMiss") and "did not validate twice" in answer
    assert "no structuredContent" in answer and requests == 2  # retried once, then refused
    assert not overlay.load().by_server.get("srv")  # nothing kept as an answer


@pytest.mark.parametrize(
    "step, reason",
    [({"hold": 30}, "did not answer within 0.5 s"), ({"status": 500}, "HTTP 500"), ({"text": ""}, "answered nothing")],
)
def test_a_hanging_failing_or_empty_simulator_is_a_clear_miss(tmp_path, step, reason):
    model = ScriptedModel({("mcpbench", "Reads the notebook"): [step]}).start()
    try:
        upstream, _, simulation = simulated_upstream(tmp_path, model, CONVERT, [], timeout=0.5)
        started = time.monotonic()
        ((source, answer),) = ask(upstream, [("read", {})])
        assert time.monotonic() - started < 10  # the 30 s hold was not waited out
    finally:
        model.stop()
    assert source == "missed" and reason in answer and simulation.failed == 1


def test_a_stateful_server_is_never_simulated_unless_allowed(tmp_path):
    model = ScriptedModel({("mcpbench", "notebook"): [{"text": "ok"}] * 4}).start()
    try:
        overlay = Cassette(tmp_path / "overlay")
        simulation = Simulation(Simulator(SimulatorConfig(model.base_url, "sim-1")), overlay, lambda v: v)
        # As the composition root wires it: a tracked server without `simulate: allowed` gets no simulation
        refused = CassetteUpstream("notes", catalog(ADD, READ), [], tracked=True)
        allowed = CassetteUpstream("notes", catalog(ADD, READ), [], tracked=True, simulation=simulation)
        assert [s for s, _ in ask(refused, [("add", {"line": "y"}), ("read", {})])] == ["missed", "missed"]
        assert [s for s, _ in ask(allowed, [("add", {"line": "y"}), ("read", {})])] == ["simulated", "simulated"]
    finally:
        model.stop()


def test_the_composition_root_simulates_only_stateless_or_allowed_servers(tmp_path):
    from mcpgw.app import Gateway
    from mcpgw.cassette.cassette import Cassette as Base
    from mcpgw.gateway.specs.server_spec import ServerSpec
    from mcpgw.gateway.specs.spec_record import spec_to_dict

    cassettes = tmp_path / "cassettes"
    base = Base(cassettes / "A")
    specs = [
        ServerSpec("pure", "stdio", command="x", flags=frozenset({"stateless"})),
        ServerSpec("notes", "stdio", command="x"),
        ServerSpec("kv", "stdio", command="x", simulate="allowed"),
    ]
    base.write_info({s.id: spec_to_dict(s) for s in specs})
    for s in specs:
        base.record_catalog(s.id, catalog(READ)["catalog"], {"recorded_at": 0})
    base.close()
    settings = Settings(
        mode="replay",
        cassettes_dir=cassettes,
        cassette="A",
        overlay="B1",
        on_miss="simulate",
        simulator=SimulatorSettings(base_url="http://127.0.0.1:9/v1", model="m"),
    )
    gateway = Gateway([], settings)
    try:
        simulated = {name: up.simulation is not None for name, up in gateway.router.upstreams.items()}
    finally:
        gateway.close()
    assert simulated == {"pure": True, "notes": False, "kv": True}


# -- replies, settings and the overlay ---------------------------------------------------------------------


def test_replies_become_tool_results_and_output_schemas_are_checked():
    assert as_tool_result("just text") == text("just text")
    assert as_tool_result('```json\n{"content": [{"type": "text", "text": "a"}]}\n```') == text("a")
    assert as_tool_result('{"answer": 3}') == text('{"answer": 3}')  # JSON that is no CallToolResult: its text
    with pytest.raises(Exception, match="without a type"):
        as_tool_result('{"content": [{"text": "a"}]}')
    assert output_problem({"structuredContent": {"celsius": 1}}, CONVERT["outputSchema"]) is None
    assert "at celsius" in output_problem({"structuredContent": {"celsius": "x"}}, CONVERT["outputSchema"])


@pytest.mark.parametrize(
    "reply, says",
    [
        ('{"content": [{"type": "text", "text": {"a": 1}}]}', "block 0 (text) is not a valid MCP block: text"),
        (
            '{"content": [{"type": "image", "data": 5, "mimeType": "image/png"}]}',
            "block 0 (image) is not a valid MCP block",
        ),
        ('{"content": [{"type": "video", "url": "x"}]}', "has type 'video', not one of"),
        ('{"content": [], "isError": "false"}', '"isError" is a string, not true or false'),
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),
    ],
)
def test_a_reply_that_is_no_valid_call_tool_result_is_refused_not_coerced(reply, says):
    with pytest.raises(Exception, match=re.escape(says)):
        as_tool_result(reply)


def test_gateway_keys_are_dropped_from_a_simulated_result_and_a_non_object_structured_content_is_retried():
    reply = json.dumps(
        {
            "content": [
                {"type": "text", "text": "a", "_meta": {"mcpgw/source": "recorded", "k": 1}},
                {"type": "text", "text": "b", "_meta": {"mcpgw/x": 1}},
            ],
            "_meta": {"mcpgw/source": "recorded"},
            "structuredContent": [1],
        }
    )
    result = as_tool_result(reply)
    assert result["content"] == [{"type": "text", "text": "a", "_meta": {"k": 1}}, {"type": "text", "text": "b"}]
    assert "_meta" not in result and output_problem(result, None) == "structuredContent must be a JSON object"


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"on_miss": "simulate", "simulator": SimulatorSettings(base_url="http://x", model="m")}, "needs --overlay"),
        ({"on_miss": "simulate", "overlay": "B"}, "--simulator-base-url"),
        ({"mode": "hybrid", "on_miss": "simulate", "overlay": "B"}, "choose one"),
        ({"mode": "record", "overlay": "B"}, "shape a replay"),
        ({"model_mode": "live", "overlay": "B"}, "--llm-base-url"),
        ({"on_miss": "live", "cassette": "A"}, "a replay never writes what it plays: add --overlay NAME"),
        (
            {"model_mode": "hybrid", "model": ModelSettings(base_url="http://x")},
            "a replay never writes what it plays: add --overlay NAME",
        ),
        ({"overlay": "B", "log_cassette": "B"}, "--log-cassette and --overlay both name 'B'"),
    ],
)
def test_contradictory_or_incomplete_answer_settings_are_refused_before_start(fields, says):
    with pytest.raises(GatewayError, match=says.replace("-", r"\-")):
        check_answer_settings(Settings(**{"mode": "replay", **fields}))


def test_an_overlay_is_a_cassette_of_its_own_over_one_base_inside_the_cassettes_folder(tmp_path):
    cassettes = tmp_path / "cassettes"
    base = Cassette(cassettes / "A")
    base.write_info({})
    other = Cassette(cassettes / "C")
    other.write_info({"s": {"id": "s"}})
    other.close()  # a recording: named as an overlay, it is refused
    with pytest.raises(CassetteError, match="is a recording, not an overlay"):
        open_overlay(Settings(cassettes_dir=cassettes, overlay="C"), base)
    other = Cassette(cassettes / "C2")
    other.write_info({})
    with pytest.raises(CassetteError, match="is the cassette being played"):
        open_overlay(Settings(cassettes_dir=cassettes, overlay="A"), base)
    open_overlay(Settings(cassettes_dir=cassettes, overlay="B1"), base).close()
    with pytest.raises(CassetteError, match="was made over cassette 'A'"):
        open_overlay(Settings(cassettes_dir=cassettes, overlay="B1"), other)
    with pytest.raises(GatewayError, match="invalid cassette name"):
        open_overlay(Settings(cassettes_dir=cassettes, overlay="../outside"), base)
    assert not (tmp_path / "outside").exists()
    base.close()
    other.close()
