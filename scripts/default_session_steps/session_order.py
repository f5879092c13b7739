"""The session as a whole: tools skipped and why, a newcomer's first guesses, the hand-written calls in order."""

from __future__ import annotations

from datetime import date

from .calculator_calls import medical_calculator, numpy_mcp, unit_converter
from .everything_calls import everything
from .scratch_world import FS_ROOT
from .step import Step, tool
from .time_thinking_memory_calls import memory, sequential_thinking, time_servers
from .workspace_calls import filesystem, git

# Tools that cannot be called meaningfully from a scripted client, and why.
SKIP = {
    "everything__trigger-sampling-request": "needs the client's sampling capability: an LLM must answer sampling/createMessage",
    "everything__trigger-sampling-request-async": "needs the client's sampling capability (as a task)",
    "everything__trigger-elicitation-request": "needs a live human to fill in the elicitation form",
    "everything__trigger-elicitation-request-async": "needs a live human to fill in the elicitation form (as a task)",
    "everything__trigger-url-elicitation": "needs a live human to open a URL and confirm",
    "everything__get-roots-list": "needs the client's roots capability: the gateway relays roots/list to the client",
}


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
        *unit_converter(),
        *medical_calculator(today),
        *numpy_mcp(),
        *time_servers(),
        *sequential_thinking(),
        *memory(),
        *filesystem(),
        *git(),
        *everything(),
    ]
