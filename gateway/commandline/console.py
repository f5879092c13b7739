"""Consoles for the CLI's tables: the terminal's width on a terminal, no cut-off when piped.

rich falls back to 80 columns when its output is not a terminal, which cuts tool
names and reasons in a file ("medical_calcula..."). Tables shrink to their content,
so a wide console only removes the cut; it pads nothing.
"""

from __future__ import annotations

from typing import IO, Any

PIPE_WIDTH = 1000


def table_console(*, stderr: bool = False, file: IO[str] | None = None, **options: Any) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr, file=file, **options)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, file=file, width=PIPE_WIDTH, **options)
