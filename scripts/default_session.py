"""The scripted session recorded into cassettes/default (data; the driver is record_default_cassette.py).

Every tool of profile `local` in servers.lock.yaml is called at least once with
hand-written, meaningful arguments. A tool that shows up in tools/list but is
neither written here nor in SKIP gets arguments generated from its inputSchema
(`arguments_from_schema`), so a newer server version still gets exercised.

Paths are the ones the lock entries fix: the filesystem server may only touch
/tmp/mcpgw-fs; the memory server keeps its graph in the run's own state directory.
The session works in /tmp/mcpgw-fs/default-session/, which the driver rebuilds
before every recording (a workspace for the filesystem tools and a small git
repository for the git tools).
"""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

FS_ROOT = "/tmp/mcpgw-fs"  # filesystem: the allowed directory (args of its lock entry)
SESSION_DIR = f"{FS_ROOT}/default-session"
WORKSPACE = f"{SESSION_DIR}/workspace"
REPO = f"{SESSION_DIR}/repo"
RUN_ID = "default-session"

# Tools that cannot be called meaningfully from a scripted client, and why.
SKIP = {
    "everything__trigger-sampling-request": "needs the client's sampling capability: an LLM must answer sampling/createMessage",
    "everything__trigger-sampling-request-async": "needs the client's sampling capability (as a task)",
    "everything__trigger-elicitation-request": "needs a live human to fill in the elicitation form",
    "everything__trigger-elicitation-request-async": "needs a live human to fill in the elicitation form (as a task)",
    "everything__trigger-url-elicitation": "needs a live human to open a URL and confirm",
    "everything__get-roots-list": "needs the client's roots capability: the gateway relays roots/list to the client",
}

VITALS_CSV = "patient,sbp,dbp,heart_rate\nP-001,120,80,72\nP-002,142,91,88\nP-003,108,68,64\n"
WARD_NOTES = "# Ward round notes\n\n- P-001: stable, discharge planned\n- P-002: MAP above target, recheck in 4 h\n- P-003: stable\n"
REPO_README = "# dose-tools\n\nSmall helpers for bedside calculations.\n"
UNITS_PY = (
    '"""Unit helpers used at the bedside."""\n\n\n'
    "def lb_to_kg(pounds: float) -> float:\n"
    "    return round(pounds * 0.45359237, 2)\n\n\n"
    "def f_to_c(fahrenheit: float) -> float:\n"
    "    return round((fahrenheit - 32) * 5 / 9, 1)\n"
)


@dataclass
class Step:
    """One request of the session. kind: tool | list_tools | list_resources | list_templates |
    list_prompts | read | prompt | complete."""

    kind: str
    target: str = ""  # exposed tool name, resource URI or exposed prompt name
    args: dict[str, Any] = field(default_factory=dict)
    progress: bool = False  # ask for progress notifications (tools/call)
    generated: bool = False  # arguments generated from the inputSchema

    def label(self) -> str:
        return f"{self.kind} {self.target}".strip()


def tool(exposed: str, /, **args: Any) -> Step:
    return Step("tool", exposed, args)


def tiny_png(width: int = 8, height: int = 8) -> bytes:
    """A small RGB gradient PNG, built byte by byte so the file is the same on every run."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 32, y * 32, 160)) for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def data_uri(mime: str, text: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(text.encode()).decode()}"


# -- per server ------------------------------------------------------------------------


def unit_converter() -> list[Step]:
    p = "unit_converter__"
    return [
        tool(p + "convert_temperature", value=100, from_unit="celsius", to_unit="fahrenheit"),  # 212
        tool(p + "convert_temperature", value=98.6, from_unit="fahrenheit", to_unit="celsius"),  # 37
        tool(p + "convert_angle", value=180, from_unit="degrees", to_unit="radians"),  # pi
        tool(p + "convert_length", value=42.195, from_unit="kilometer", to_unit="mile"),  # a marathon, 26.2 mi
        tool(p + "convert_energy", value=1, from_unit="kilowatt hour", to_unit="megajoule"),  # 3.6
        tool(p + "convert_force", value=1, from_unit="kilonewtons", to_unit="pounds force"),  # 224.8
        tool(p + "convert_pressure", value=1, from_unit="atmosphere", to_unit="kilopascal"),  # 101.325
        tool(p + "convert_power", value=1, from_unit="horsepower", to_unit="watt"),  # 745.7
        tool(p + "convert_speed", value=100, from_unit="kilometers per hour", to_unit="miles per hour"),  # 62.1
        tool(p + "convert_area", value=1, from_unit="hectare", to_unit="acre"),  # 2.471
        tool(p + "convert_mass", value=11, from_unit="stone", to_unit="kilogram"),  # 69.9
        tool(p + "convert_volume", value=1, from_unit="gallon (US)", to_unit="liter"),  # 3.785
        tool(p + "convert_computer_data", value=4, from_unit="gigabytes", to_unit="megabytes"),
        tool(p + "convert_density", value=1, from_unit="grams per cubic centimeter", to_unit="kilograms per cubic meter"),  # 1000
        tool(p + "convert_time", value=1, from_unit="fortnights", to_unit="days"),  # 14
        tool(p + "convert_batch", requests=[
            {"value": 5, "from_unit": "kilometer", "to_unit": "mile", "conversion_type": "length", "request_id": "5k-run"},
            {"value": 180, "from_unit": "pound", "to_unit": "kilogram", "conversion_type": "mass", "request_id": "body-weight"},
            {"value": 350, "from_unit": "fahrenheit", "to_unit": "celsius", "conversion_type": "temperature", "request_id": "oven"},
        ]),
        tool(p + "list_supported_units", unit_type="pressure"),
    ]


def medical_calculator(today: date) -> list[Step]:
    p = "medical_calculator__"
    lmp = (today - timedelta(weeks=12)).isoformat()  # a first-trimester patient whenever this is recorded
    return [
        tool(p + "egfr_epi", scr=1.1, age=58, male=True),
        tool(p + "egfr_epi_cr_cys", scr=1.1, scys=1.0, age=58, male=True),
        tool(p + "bp_children", years=8, months=4, height=128, sex="female", systolic=104, diastolic=66),
        tool(p + "bmi_bsa_calculator", weight=70, height=175),  # BMI 22.9, BSA 1.84
        tool(p + "crcl_cockcroft_gault", age=67, weight=82, height=69, scr=1.3, sex="male"),
        tool(p + "map_calculator", sbp=120, dbp=80),  # 93.3
        tool(p + "chads2_vasc_score", age=76, female=True, chf=False, hypertension=True, stroke_history=False,
             vascular_disease=False, diabetes=True),  # 5
        tool(p + "prevent_cvd_risk", age=55, female=False, tc=5.2, hdl=1.3, sbp=138, diabetes=False, current_smoker=True,
             egfr=88, using_antihtn=True, using_statins=False),
        tool(p + "corrected_calcium", serum_calcium=8.2, patient_albumin=2.8),  # 9.16
        tool(p + "qtc_calculator", qt_interval=400, heart_rate=88, formula="fridericia"),
        tool(p + "wells_pe_criteria", clinical_signs_dvt=True, heart_rate_over_100=True),  # 4.5
        tool(p + "ibw_abw_calculator", weight_kg=95, height_inches=70, male=True),
        tool(p + "pregnancy_calculator", calculation_method="lmp", date_value=lmp),
        tool(p + "revised_cardiac_risk_index", high_risk_surgery=True, ischemic_heart_disease=True),  # 2
        tool(p + "child_pugh_score", bilirubin=2.5, albumin=3.0, inr=1.8, ascites="slight", encephalopathy_grade=1),  # 10
        tool(p + "steroid_conversion", from_steroid="prednisone", from_dose_mg=40, to_steroid="dexamethasone"),  # 6.0
        tool(p + "calculate_mme", opioid="oxycodone", dose_per_administration=10, doses_per_day=4),  # 60
        tool(p + "maintenance_fluids", weight_kg=25),  # 4-2-1 rule: 65 mL/h
        tool(p + "corrected_sodium", measured_sodium=130, serum_glucose=400),  # Katz 134.8, Hillier 137.2
        tool(p + "meld_3", age=52, female=False, bilirubin=3.2, inr=1.9, creatinine=1.6, albumin=2.9, sodium=131,
             dialysis=False),
        tool(p + "framingham_risk_score", age=61, total_cholesterol=230, hdl_cholesterol=42, systolic_bp=148,
             treated_for_bp=True, smoker=False, gender="male"),
        tool(p + "homa_ir", fasting_insulin=12, fasting_glucose=105),  # 3.11
    ]


def numpy_mcp() -> list[Step]:
    # the `local` profile's early Scientific Computing (PyPI numpy-mcp; MCP-Bench's own build is scientific_computing)
    p = "numpy_mcp__"
    return [
        tool(p + "create_matrix", shape=[2, 2], values=[4, 7, 2, 6], name="A"),
        tool(p + "create_matrix", shape=[2, 2], values=[1, 2, 3, 4], name="B"),
        tool(p + "create_matrix", shape=[2, 2], values=[2, 1, 1, 2], name="S"),
        tool(p + "get_tensors"),
        tool(p + "view_tensor", name="A"),
        tool(p + "add_tensors", name_a="A", name_b="B"),  # [[5,9],[5,10]]
        tool(p + "subtract_tensors", name_a="A", name_b="B"),  # [[3,5],[-1,2]]
        tool(p + "scale_tensor", name="B", scale_factor=2.5, in_place=False),
        tool(p + "transpose", name="A"),
        tool(p + "determinant", name="A"),  # 10
        tool(p + "rank", name="A"),  # 2
        tool(p + "matrix_inverse", name="A"),  # [[0.6,-0.7],[-0.2,0.4]]
        tool(p + "eigen", name="S"),  # 3 and 1
        tool(p + "delete_tensor", name="B"),
        tool(p + "get_tensors"),
    ]


def time_servers() -> list[Step]:
    return [
        tool("time_mcp__get_current_time", timezone="Europe/Paris"),
        tool("time_mcp__convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"),  # 21:00
        tool("time__get_current_time", timezone="America/New_York"),
        tool("time__convert_time", source_timezone="America/Los_Angeles", time="09:30", target_timezone="Europe/Berlin"),
        tool("time__convert_time", source_timezone="Asia/Kolkata", time="18:45", target_timezone="Australia/Sydney"),
    ]


def sequential_thinking() -> list[Step]:
    p = "sequential_thinking__sequentialthinking"
    return [
        tool(p, thought="Question: is a 3 h 30 min marathon faster than 12 km/h? A marathon is 42.195 km.",
             nextThoughtNeeded=True, thoughtNumber=1, totalThoughts=3),
        tool(p, thought="Average speed = 42.195 km / 3.5 h = 12.06 km/h, which is above 12 km/h.",
             nextThoughtNeeded=True, thoughtNumber=2, totalThoughts=3),
        tool(p, thought="Revising thought 1: the question is about the average pace, so splits do not matter.",
             nextThoughtNeeded=True, thoughtNumber=3, totalThoughts=4, isRevision=True, revisesThought=1),
        tool(p, thought="Branch: at 12 km/h exactly the marathon takes 3 h 31 min; so yes, 3 h 30 min is faster.",
             nextThoughtNeeded=False, thoughtNumber=4, totalThoughts=4, branchFromThought=2, branchId="pace-check"),
    ]


def memory() -> list[Step]:
    p = "memory__"
    return [
        tool(p + "create_entities", entities=[
            {"name": "Ada Lovelace", "entityType": "person",
             "observations": ["Wrote the first published algorithm for a machine", "Born 10 December 1815 in London"]},
            {"name": "Charles Babbage", "entityType": "person", "observations": ["Mathematician and inventor"]},
            {"name": "Analytical Engine", "entityType": "machine",
             "observations": ["Designed by Charles Babbage", "Never completed"]},
        ]),
        tool(p + "create_relations", relations=[
            {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "wrote programs for"},
            {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},
            {"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "corresponded with"},
        ]),
        tool(p + "add_observations", observations=[
            {"entityName": "Ada Lovelace", "contents": ["Translated Menabrea's article on the engine in 1843"]},
        ]),
        tool(p + "read_graph"),
        tool(p + "search_nodes", query="Engine"),
        tool(p + "open_nodes", names=["Ada Lovelace", "Analytical Engine"]),
        Step("read", "memory://knowledge-graph"),
        tool(p + "delete_observations", deletions=[{"entityName": "Analytical Engine", "observations": ["Never completed"]}]),
        tool(p + "delete_relations", relations=[
            {"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "corresponded with"},
        ]),
        tool(p + "delete_entities", entityNames=["Charles Babbage"]),
        tool(p + "read_graph"),
    ]


def filesystem() -> list[Step]:
    p = "filesystem__"
    notes, vitals = f"{WORKSPACE}/notes.md", f"{WORKSPACE}/vitals.csv"
    return [
        tool(p + "list_allowed_directories"),
        tool(p + "create_directory", path=f"{WORKSPACE}/reports"),
        tool(p + "write_file", path=vitals, content=VITALS_CSV),
        tool(p + "write_file", path=notes, content=WARD_NOTES),
        tool(p + "read_text_file", path=notes),
        tool(p + "read_text_file", path=vitals, head=2),
        tool(p + "read_file", path=vitals, tail=1),
        tool(p + "read_multiple_files", paths=[notes, vitals]),
        tool(p + "edit_file", path=notes, edits=[{"oldText": "recheck in 4 h", "newText": "recheck in 2 h"}], dryRun=True),
        tool(p + "edit_file", path=notes, edits=[{"oldText": "recheck in 4 h", "newText": "recheck in 2 h"}]),
        tool(p + "read_media_file", path=f"{WORKSPACE}/chart.png"),
        tool(p + "get_file_info", path=vitals),
        tool(p + "list_directory", path=WORKSPACE),
        tool(p + "list_directory_with_sizes", path=WORKSPACE, sortBy="size"),
        tool(p + "move_file", source=notes, destination=f"{WORKSPACE}/reports/ward-round.md"),
        tool(p + "search_files", path=WORKSPACE, pattern="**/*.md"),
        tool(p + "directory_tree", path=WORKSPACE),
    ]


def git() -> list[Step]:
    """The git tools on the scratch repository; its files are changed through the filesystem server."""
    p = "git__"
    return [
        tool(p + "git_status", repo_path=REPO),
        tool(p + "git_log", repo_path=REPO, max_count=5),
        tool("filesystem__write_file", path=f"{REPO}/units.py", content=UNITS_PY),
        tool("filesystem__edit_file", path=f"{REPO}/README.md", edits=[
            {"oldText": "Small helpers for bedside calculations.",
             "newText": "Small helpers for bedside calculations.\n\n- `units.py`: pounds to kilograms, Fahrenheit to Celsius"},
        ]),
        tool(p + "git_status", repo_path=REPO),
        tool(p + "git_diff_unstaged", repo_path=REPO),
        tool(p + "git_add", repo_path=REPO, files=["README.md", "units.py"]),
        tool(p + "git_diff_staged", repo_path=REPO),
        tool(p + "git_reset", repo_path=REPO),
        tool(p + "git_add", repo_path=REPO, files=["README.md", "units.py"]),
        tool(p + "git_commit", repo_path=REPO, message="Add unit conversion helpers"),
        tool(p + "git_log", repo_path=REPO, max_count=5),
        tool(p + "git_show", repo_path=REPO, revision="HEAD"),
        tool(p + "git_create_branch", repo_path=REPO, branch_name="feature/batch-doses", base_branch="main"),
        tool(p + "git_checkout", repo_path=REPO, branch_name="feature/batch-doses"),
        tool(p + "git_branch", repo_path=REPO, branch_type="local"),
        tool(p + "git_diff", repo_path=REPO, target="HEAD~1"),
    ]


def everything() -> list[Step]:
    p = "everything__"
    return [
        tool(p + "echo", message="hello from the mcpgw default cassette"),
        tool(p + "get-sum", a=17.5, b=24.5),  # 42
        tool(p + "get-annotated-message", messageType="error"),
        tool(p + "get-annotated-message", messageType="success", includeImage=True),
        tool(p + "get-env"),
        tool(p + "get-resource-links", count=3),
        tool(p + "get-resource-reference", resourceType="Text", resourceId=1),
        tool(p + "get-resource-reference", resourceType="Blob", resourceId=2),
        tool(p + "get-structured-content", location="Chicago"),
        tool(p + "get-tiny-image"),
        tool(p + "gzip-file-as-resource", name="vitals.csv.gz", data=data_uri("text/csv", VITALS_CSV), outputType="resource"),
        tool(p + "gzip-file-as-resource", name="ward-notes.md.gz", data=data_uri("text/markdown", WARD_NOTES)),
        tool(p + "toggle-simulated-logging"),  # on
        tool(p + "toggle-simulated-logging"),  # off again
        tool(p + "toggle-subscriber-updates"),  # on
        tool(p + "toggle-subscriber-updates"),  # off again
        Step("tool", p + "trigger-long-running-operation", {"duration": 2, "steps": 4}, progress=True),
        # taskSupport "required": a plain tools/call gets an isError answer; recorded as such.
        tool(p + "simulate-research-query", topic="offline replay of MCP tool calls", ambiguous=False),
    ]


def resources_and_prompts() -> list[Step]:
    return [
        Step("list_resources"),
        Step("list_templates"),
        Step("read", "demo://resource/static/document/instructions.md"),
        Step("read", "demo://resource/dynamic/text/1"),
        Step("read", "demo://resource/dynamic/blob/2"),
        Step("read", "demo://resource/session/ward-notes.md.gz"),  # made by gzip-file-as-resource above
        Step("list_prompts"),
        Step("prompt", "everything__simple-prompt"),
        Step("prompt", "everything__args-prompt", {"city": "Lisbon", "state": "Lisboa"}),
        Step("prompt", "everything__completable-prompt", {"department": "Engineering", "name": "Alice"}),
        Step("prompt", "everything__resource-prompt", {"resourceType": "Text", "resourceId": "3"}),
        Step("complete", "everything__completable-prompt", {"argument": {"name": "department", "value": "S"}}),
        Step("complete", "everything__completable-prompt",
             {"argument": {"name": "name", "value": ""}, "context": {"department": "Marketing"}}),
    ]


def newcomer_guesses() -> list[Step]:
    """What a person trying the gateway for the first time types before anything else, from the
    tool descriptions alone: the obvious arguments. Recorded so that the first minutes work offline."""
    return [
        tool("time__get_current_time", timezone="UTC"),
        tool("time_mcp__get_current_time", timezone="UTC"),
        tool("time__convert_time", source_timezone="UTC", time="12:00", target_timezone="Europe/London"),
        tool("everything__echo", message="hello"),
        tool("everything__get-sum", a=1, b=2),
        tool("unit_converter__convert_temperature", value=0, from_unit="celsius", to_unit="fahrenheit"),
        tool("unit_converter__convert_length", value=1, from_unit="mile", to_unit="kilometer"),
        tool("medical_calculator__bmi_bsa_calculator", weight=80, height=180),
        tool("memory__search_nodes", query="test"),
        tool("filesystem__list_directory", path=FS_ROOT),
    ]


def hand_written(today: date) -> list[Step]:
    """The whole hand-written session, in the order it is played."""
    return [
        *newcomer_guesses(),
        *unit_converter(), *medical_calculator(today), *numpy_mcp(), *time_servers(),
        *sequential_thinking(), *memory(), *filesystem(), *git(), *everything(),
    ]


# -- arguments from a schema -------------------------------------------------------------


def arguments_from_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool nobody wrote a call for: its required properties, each with the
    first enum value, its default or example, or a plain value of its type."""
    value = _example(schema, schema, 0)
    return value if isinstance(value, dict) else {}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _example(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 8:
        return None
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("default") is not None:
        return schema["default"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, dict) and o.get("type") != "null"]
        if options:
            return _example(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _example(props.get(name, {}), root, depth + 1) for name in schema.get("required") or []}
    if kind == "array":
        item = _example(schema.get("items") or {}, root, depth + 1)
        return [item] * max(1, int(schema.get("minItems") or 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    fmt = schema.get("format")
    text = {"date": date.today().isoformat(), "date-time": f"{date.today().isoformat()}T12:00:00Z",
            "uri": "https://example.com/", "email": "someone@example.com"}.get(fmt, "example")
    return text.ljust(int(schema.get("minLength") or 0), "x")
