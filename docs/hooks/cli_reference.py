"""MkDocs hook: the CLI reference is written from `mcpgw`'s own argparse parsers at build time, so it cannot
drift from the code. A page holding the marker `<!-- mcpgw-cli-reference -->` gets, in its place, every command
and action with its usage line and each option's help."""

from __future__ import annotations

import argparse
from typing import Any

MARKER = "<!-- mcpgw-cli-reference -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from mcpgw.cli import build_parser

    return markdown.replace(MARKER, "\n".join(reference(build_parser())))


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of each subcommand or action, in the order `--help` lists them."""
    for action in parser._actions:  # argparse keeps its subparsers here only
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def reference(parser: argparse.ArgumentParser, depth: int = 2) -> list[str]:
    out: list[str] = []
    for name, sub in subcommands(parser):
        out += [f"{'#' * depth} `{sub.prog}`", ""]
        if sub.description:
            out += [sub.description, ""]
        out += ["```text", sub.format_usage().strip(), "```", ""]
        rows = [row for row in map(option_row, sub._actions) if row]
        if rows:
            out += ["| option | what it does |", "|---|---|", *rows, ""]
        out += reference(sub, min(depth + 1, 4))
    return out


def option_row(action: argparse.Action) -> str | None:
    if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
        return None
    names = ", ".join(action.option_strings) or action.dest
    if action.choices is not None and not isinstance(action.choices, dict):
        names += " {" + ",".join(map(str, action.choices)) + "}"
    elif action.metavar and action.option_strings:
        names += f" {action.metavar}"
    text = (action.help or "").replace("|", "\\|").replace("\n", " ")
    if action.default not in (None, False, argparse.SUPPRESS, [], ()) and "default" not in text:
        text += f" (default: `{action.default}`)"
    return f"| `{names.replace('|', '/')}` | {text} |"
