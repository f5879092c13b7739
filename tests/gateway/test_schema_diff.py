"""The breaking / compatible classification, on hand-made schemas."""

from __future__ import annotations

import copy

import pytest

from mcpgw.gateway.tools import schema_diff as sd
from mcpgw.gateway.tools.schema_diff import Change, diff_catalogs, diff_schema, diff_tools, is_breaking

BASE = {
    "type": "object",
    "properties": {
        "value": {"type": "number", "description": "the amount"},
        "unit": {"type": "string", "enum": ["m", "km", "mi"]},
        "precision": {"type": "integer", "minimum": 0, "maximum": 10, "default": 2},
        "options": {
            "type": "object",
            "properties": {"mode": {"type": "string", "enum": ["fast", "exact"]}, "trace": {"type": "boolean"}},
            "required": ["mode"],
        },
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}},
    },
    "required": ["value", "unit"],
}


def changed(edit) -> list[Change]:
    new = copy.deepcopy(BASE)
    edit(new)
    return diff_schema(BASE, new, "convert")


def kinds(changes: list[Change]) -> list[tuple[str, str, bool]]:
    return [(c.kind, c.path, c.breaking) for c in changes]


def test_identical_and_reordered_schemas_have_no_changes():
    assert diff_schema(BASE, copy.deepcopy(BASE), "t") == []
    reordered = {
        "required": ["value", "unit"],
        "properties": dict(reversed(BASE["properties"].items())),
        "type": "object",
    }
    assert diff_schema(BASE, reordered, "t") == []


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda s: s["properties"].pop("precision"), [(sd.PARAM_REMOVED, "precision", True)]),
        (
            lambda s: (s["properties"].update(scale={"type": "number"}), s["required"].append("scale")),
            [(sd.PARAM_ADDED_REQUIRED, "scale", True)],
        ),
        (lambda s: s["properties"].update(scale={"type": "number"}), [(sd.PARAM_ADDED_OPTIONAL, "scale", False)]),
        (lambda s: s["required"].append("precision"), [(sd.NOW_REQUIRED, "precision", True)]),
        (lambda s: s["required"].remove("unit"), [(sd.NOW_OPTIONAL, "unit", False)]),
        (lambda s: s["properties"]["value"].update(type="string"), [(sd.TYPE_CHANGED, "value", True)]),
        (lambda s: s["properties"]["precision"].update(type="number"), [(sd.TYPE_WIDENED, "precision", False)]),
        (lambda s: s["properties"]["value"].update(type="integer"), [(sd.TYPE_CHANGED, "value", True)]),
        (lambda s: s["properties"]["value"].update(type=["number", "string"]), [(sd.TYPE_WIDENED, "value", False)]),
        (lambda s: s["properties"]["unit"].update(enum=["m", "km"]), [(sd.ENUM_NARROWED, "unit", True)]),
        (lambda s: s["properties"]["unit"].update(enum=["m", "km", "mi", "ft"]), [(sd.ENUM_WIDENED, "unit", False)]),
        (lambda s: s["properties"]["unit"].update(enum=["m", "km", "ft"]), [(sd.ENUM_NARROWED, "unit", True)]),
        (lambda s: s["properties"]["unit"].pop("enum"), [(sd.ENUM_WIDENED, "unit", False)]),
        (lambda s: s["properties"]["value"].update(enum=[1, 2]), [(sd.ENUM_NARROWED, "value", True)]),
        (lambda s: s["properties"]["value"].update(const=1), [(sd.ENUM_NARROWED, "value", True)]),
        (lambda s: s["properties"]["precision"].update(minimum=1), [(sd.CONSTRAINT_NARROWED, "precision", True)]),
        (lambda s: s["properties"]["precision"].update(maximum=20), [(sd.CONSTRAINT_RELAXED, "precision", False)]),
        (lambda s: s["properties"]["precision"].update(maximum=5), [(sd.CONSTRAINT_NARROWED, "precision", True)]),
        (lambda s: s["properties"]["precision"].pop("minimum"), [(sd.CONSTRAINT_RELAXED, "precision", False)]),
        (lambda s: s["properties"]["unit"].update(pattern="^[a-z]+$"), [(sd.CONSTRAINT_NARROWED, "unit", True)]),
        (lambda s: s["properties"]["tags"].update(uniqueItems=True), [(sd.CONSTRAINT_NARROWED, "tags", True)]),
        (lambda s: s["properties"]["precision"].update(default=3), [(sd.DEFAULT_CHANGED, "precision", False)]),
        (lambda s: s["properties"]["value"].update(description="how much"), [(sd.DESCRIPTION_CHANGED, "value", False)]),
        (
            lambda s: s["properties"]["value"].update(title="Value", examples=[3]),
            [(sd.DESCRIPTION_CHANGED, "value", False)],
        ),
        (lambda s: s.update(additionalProperties=False), [(sd.EXTRA_CLOSED, "", True)]),
        (lambda s: s.update(additionalProperties=True), []),
        (lambda s: s["properties"]["value"].update(format="float"), [(sd.CONSTRAINT_NARROWED, "value", True)]),
        (
            lambda s: s["properties"]["value"].update(dependentRequired={"a": ["b"]}),
            [(sd.SCHEMA_CHANGED, "value", True)],
        ),
    ],
)
def test_parameter_changes(edit, expected):
    assert kinds(changed(edit)) == expected


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda s: s["properties"]["options"]["properties"].pop("trace"), [(sd.PARAM_REMOVED, "options.trace", True)]),
        (lambda s: s["properties"]["options"]["required"].append("trace"), [(sd.NOW_REQUIRED, "options.trace", True)]),
        (
            lambda s: s["properties"]["options"]["properties"]["mode"].update(enum=["fast"]),
            [(sd.ENUM_NARROWED, "options.mode", True)],
        ),
        (
            lambda s: s["properties"]["options"]["properties"].update(level={"type": "integer"}),
            [(sd.PARAM_ADDED_OPTIONAL, "options.level", False)],
        ),
        (lambda s: s["properties"]["tags"]["items"].update(type="integer"), [(sd.TYPE_CHANGED, "tags[]", True)]),
        (lambda s: s["properties"]["tags"]["items"].update(maxLength=10), [(sd.CONSTRAINT_NARROWED, "tags[]", True)]),
        (lambda s: s["properties"]["tags"]["items"].pop("maxLength"), [(sd.CONSTRAINT_RELAXED, "tags[]", False)]),
    ],
)
def test_nested_objects_and_arrays(edit, expected):
    assert kinds(changed(edit)) == expected


def test_optional_union_folds_into_its_type():
    plain = {"type": "object", "properties": {"q": {"type": "string"}}}
    optional = {
        "type": "object",
        "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
    }
    assert kinds(diff_schema(plain, optional, "t")) == [(sd.TYPE_WIDENED, "q", False), (sd.DEFAULT_CHANGED, "q", False)]
    assert kinds(diff_schema(optional, plain, "t"))[0] == (sd.TYPE_CHANGED, "q", True)
    nullable = {"type": "object", "properties": {"q": {"type": "string", "nullable": True}}}
    assert kinds(diff_schema(plain, nullable, "t")) == [(sd.TYPE_WIDENED, "q", False)]


def test_union_of_types_narrowed_once():
    old = {"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
    new = {"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}]}}}
    assert kinds(diff_schema(old, new, "t")) == [(sd.TYPE_CHANGED, "v", True)]
    assert kinds(diff_schema(new, old, "t")) == [(sd.TYPE_WIDENED, "v", False)]


def test_union_of_objects_compared_branch_by_branch_and_by_count():
    a = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    b = {"type": "object", "properties": {"y": {"type": "string"}}}
    old = {"type": "object", "properties": {"shape": {"oneOf": [a, b]}}}
    grown = copy.deepcopy(old)
    grown["properties"]["shape"]["oneOf"][1]["properties"]["z"] = {"type": "string"}
    assert kinds(diff_schema(old, grown, "t")) == [(sd.PARAM_ADDED_OPTIONAL, "shape<oneOf[1]>.z", False)]
    fewer = {"type": "object", "properties": {"shape": {"oneOf": [a]}}}
    assert (sd.VARIANT_REMOVED, "shape", True) in kinds(diff_schema(old, fewer, "t"))
    assert (sd.VARIANT_ADDED, "shape", False) in kinds(diff_schema(fewer, old, "t"))


def test_refs_are_resolved_before_comparing():
    def schema(kinds_enum):
        return {
            "type": "object",
            "$defs": {"Kind": {"type": "string", "enum": kinds_enum}},
            "properties": {"kind": {"$ref": "#/$defs/Kind"}, "other": {"$ref": "#/$defs/Kind", "description": "x"}},
        }

    assert diff_schema(schema(["a", "b"]), schema(["a", "b"]), "t") == []
    narrowed = kinds(diff_schema(schema(["a", "b"]), schema(["a"]), "t"))
    assert narrowed == [(sd.ENUM_NARROWED, "kind", True), (sd.ENUM_NARROWED, "other", True)]
    inlined = {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["a", "b"]},
            "other": {"type": "string", "enum": ["a", "b"], "description": "x"},
        },
    }
    assert diff_schema(schema(["a", "b"]), inlined, "t") == []


def test_recursive_refs_terminate():
    tree = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    "label": {"type": "string"},
                },
            }
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    other = copy.deepcopy(tree)
    other["$defs"]["Node"]["properties"]["label"]["type"] = "integer"
    changes = diff_schema(tree, other, "t")
    assert (sd.TYPE_CHANGED, "root.label", True) in kinds(changes)
    assert is_breaking(changes)


def test_type_from_nothing_to_something_is_breaking_and_back_compatible():
    free = {"type": "object", "properties": {"v": {}}}
    typed = {"type": "object", "properties": {"v": {"type": "string"}}}
    assert kinds(diff_schema(free, typed, "t")) == [(sd.TYPE_CHANGED, "v", True)]
    assert kinds(diff_schema(typed, free, "t")) == [(sd.TYPE_WIDENED, "v", False)]


def test_boolean_and_odd_schemas():
    assert kinds(diff_schema(True, False, "t"))[0][2] is True
    assert diff_schema(True, {}, "t") == []
    assert diff_schema(None, {}, "t") == []
    assert kinds(
        diff_schema({}, {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, "t")
    ) == [(sd.TYPE_CHANGED, "", True), (sd.PARAM_ADDED_REQUIRED, "a", True)]


def test_draft4_boolean_exclusive_bounds():
    old = {"type": "object", "properties": {"n": {"type": "number", "minimum": 0}}}
    new = {"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}}
    assert kinds(diff_schema(old, new, "t")) == [(sd.CONSTRAINT_NARROWED, "n", True)]
    assert kinds(diff_schema(new, old, "t")) == [(sd.CONSTRAINT_RELAXED, "n", False)]


def test_additional_properties_schema_is_compared():
    old = {"type": "object", "additionalProperties": {"type": "string"}}
    new = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert kinds(diff_schema(old, new, "t")) == [(sd.TYPE_CHANGED, "*", True)]
    assert kinds(diff_schema({"type": "object", "additionalProperties": False}, old, "t")) == [
        (sd.EXTRA_OPENED, "", False)
    ]


def test_tools_added_removed_and_described():
    old = {"a": {"description": "x", "inputSchema": BASE}, "b": {"inputSchema": {}}}
    new = {"a": {"description": "y", "inputSchema": BASE}, "c": {"inputSchema": {}}}
    assert kinds(diff_tools(old, new)) == [
        (sd.TOOL_REMOVED, "", True),
        (sd.TOOL_ADDED, "", False),
        (sd.DESCRIPTION_CHANGED, "", False),
    ]
    assert [c.tool for c in diff_tools(old, new)] == ["b", "c", "a"]
    assert diff_tools(old, old) == []


def test_diff_catalogs_splits_for_drift():
    old = [{"name": "a", "inputSchema": BASE}, {"name": "gone", "inputSchema": {}}]
    new = [{"name": "a", "inputSchema": {**BASE, "required": ["value"]}}, {"name": "new", "inputSchema": {}}]
    result = diff_catalogs(old, new)
    assert {c["kind"] for c in result["breaking"]} == {sd.TOOL_REMOVED}
    assert {c["kind"] for c in result["compatible"]} == {sd.TOOL_ADDED, sd.NOW_OPTIONAL}
    assert result["breaking"][0] == {"tool": "gone", "kind": "tool_removed", "breaking": True, "path": "", "detail": ""}


def test_changes_describe_themselves():
    change = changed(lambda s: s["properties"]["unit"].update(enum=["m"]))[0]
    assert change.describe() == 'convert.unit: enum narrowed (removed "km", "mi")'
    assert Change("t", sd.TOOL_REMOVED, True).describe() == "t: tool removed"
