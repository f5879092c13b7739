"""Rendering a report (or an audit) as terminal text, JSON, Markdown or one HTML file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator.report.html import html_audit, html_report
from mcpgw.evaluator.report.text import json_text, markdown_audit, markdown_report, print_audit, print_report

FORMATS = ("terminal", "json", "markdown", "html")


def render(report: Mapping[str, Any], fmt: str) -> str:
    """The report as text in a file format (terminal output is printed, not rendered)."""
    if fmt == "json":
        return json_text(report)
    if fmt == "markdown":
        return markdown_report(report)
    if fmt == "html":
        return html_report(report)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def render_audit(audit: Mapping[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json_text(audit)
    if fmt == "markdown":
        return markdown_audit(audit)
    if fmt == "html":
        return html_audit(audit)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


__all__ = ["FORMATS", "render", "render_audit", "print_report", "print_audit"]
