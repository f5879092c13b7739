"""Progress on stderr while a profile's servers start (shown on a terminal only)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from mcpgw.lock.config import ServerSpec
from mcpgw.lock.probe import Probe, probe_servers


def progress_bar(console: Console | None = None) -> Progress:
    console = console or Console(stderr=True)
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    )


async def probe_with_progress(specs: list[ServerSpec], timeout: float, verb: str) -> list[Probe]:
    with progress_bar() as progress:
        task = progress.add_task(f"{verb}: starting {len(specs)} server(s)", total=len(specs))

        def done(probe: Probe) -> None:
            mark = "[green]ready[/]" if probe.ready else f"[red]{probe.state}[/]"
            if progress.console.is_terminal:
                progress.console.print(f"  {probe.spec.id:<28} {mark} {probe.seconds:5.1f}s")
            progress.advance(task)

        return await probe_servers(specs, timeout=timeout, on_done=done)
