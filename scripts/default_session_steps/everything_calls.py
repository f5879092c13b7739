"""Calls to the everything server: its tools, then resources, templates, prompts and completions."""

from __future__ import annotations

from .scratch_world import VITALS_CSV, WARD_NOTES, data_uri
from .step import Step, tool


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
        tool(
            p + "gzip-file-as-resource",
            name="vitals.csv.gz",
            data=data_uri("text/csv", VITALS_CSV),
            outputType="resource",
        ),
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
        Step(
            "complete",
            "everything__completable-prompt",
            {"argument": {"name": "name", "value": ""}, "context": {"department": "Marketing"}},
        ),
    ]
