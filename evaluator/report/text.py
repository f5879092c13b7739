"""Terminal (rich) and Markdown renderings of the report's sections."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator.report.section import Section
from mcpgw.evaluator.report.tables import all_sections, audit_examples, cell
from mcpgw.evaluator.report.tables import audit as audit_section

_NUMERIC = {"rate", "pct", "lowpct", "int", "ms"}


def _rich_table(section: Section) -> Any:
    from rich.table import Table

    table = Table(title=section.title, title_justify="left", title_style="bold", header_style="bold cyan")
    for header, kind in section.columns:
        table.add_column(header, justify="right" if kind in _NUMERIC else "left", overflow="fold")
    for row in section.rows:
        table.add_row(*(_styled(value, kind) for value, (_, kind) in zip(row, section.columns, strict=True)))
    return table


def _styled(value: Any, kind: str) -> str:
    text = cell(value, kind)
    # Rates that say "healthy" or "bad" at a glance; the columns where lower is better are ints or text.
    if kind in ("pct", "lowpct") and isinstance(value, float):
        good = value if kind == "pct" else 1.0 - value
        if good < 0.5:
            return f"[red]{text}[/red]"
        if good < 0.9:
            return f"[yellow]{text}[/yellow]"
    return text.replace("[", "\\[")


def print_sections(sections: list[Section], console: Any = None) -> None:
    from rich.console import Console

    console = console or Console()
    for section in sections:
        if section.rows:
            console.print(_rich_table(section))
        for note in section.notes:
            console.print(f"  [dim]{note.replace('[', chr(92) + '[')}[/dim]")
        console.print()


def print_report(report: Mapping[str, Any], console: Any = None, audit_limit: int = 30) -> None:
    print_sections(all_sections(report, audit_limit), console)


def _audit_sections(audit_report: Mapping[str, Any], limit: int | None = None) -> list[Section]:
    sections = [audit_section({"audit": audit_report}, limit), audit_examples({"audit": audit_report}, limit)]
    return [s for s in sections if s is not None]


def print_audit(audit_report: Mapping[str, Any], console: Any = None, limit: int | None = 50) -> None:
    print_sections(_audit_sections(audit_report, limit), console)
    for failure in audit_report.get("threshold_failures") or []:
        (console or _console()).print(f"[red]below threshold:[/red] {failure.replace('[', chr(92) + '[')}")


def _console() -> Any:
    from rich.console import Console

    return Console()


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_sections(sections: list[Section], title: str = "Evaluation report") -> str:
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        if section.rows:
            lines.append("| " + " | ".join(_md_escape(h) for h, _ in section.columns) + " |")
            lines.append("|" + "|".join("---:" if k in _NUMERIC else "---" for _, k in section.columns) + "|")
            for row in section.rows:
                cells = (_md_escape(cell(v, k)) for v, (_, k) in zip(row, section.columns, strict=True))
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        lines += [f"- {_md_escape(note)}" for note in section.notes]
        if section.notes:
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def markdown_report(report: Mapping[str, Any]) -> str:
    return markdown_sections(all_sections(report))


def markdown_audit(audit_report: Mapping[str, Any]) -> str:
    return markdown_sections(_audit_sections(audit_report), title="Per-tool call-validity audit")


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
