"""One request of the scripted session, and the shorthand for a tool call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
