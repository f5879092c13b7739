"""The composition root owns the command line: every command is registered in mcpgw/commands/,
and every registered handler imports (a broken feature fails here, it does not vanish from the CLI)."""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import pytest

from mcpgw.cli import build_parser
from mcpgw.commands import LazyHandler

ROOT = Path(__file__).resolve().parents[2]
FEATURES = ("gateway", "cassette", "recorder", "replay", "evaluator", "llm", "runs", "harness", "lock")


def _handlers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    found = {path: parser.get_default("func")} if parser.get_default("func") is not None else {}
    for action in parser._actions:  # noqa: SLF001 (argparse keeps subparsers nowhere else)
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, child in action.choices.items():
                found.update(_handlers(child, (*path, name)))
    return found


def test_every_command_has_a_handler_that_imports():
    handlers = _handlers(build_parser())
    expected = {
        ("serve",),
        ("servers",),
        ("servers", "install"),
        ("calls", "export"),
        ("cassette", "show"),
        ("lock", "import"),
        ("lock", "refresh"),
        ("lock", "check"),
        ("run",),
        ("drift",),
        ("connect",),
        ("eval",),
        ("audit",),
    }
    assert expected <= set(handlers), sorted(expected - set(handlers))
    lazy = {path: h for path, h in handlers.items() if isinstance(h, LazyHandler)}
    assert len(lazy) >= 10
    for path, handler in lazy.items():
        assert callable(handler.resolve()), f"mcpgw {' '.join(path)}: {handler} does not resolve"


def test_a_handler_that_does_not_import_is_an_error_not_a_missing_command(monkeypatch, capsys):
    """A feature whose module fails to import (a missing dependency, a syntax error) keeps its command: the
    parser is built without importing it, `--help` shows it, and running it raises that import error (not
    argparse's "invalid choice", not a silent exit 0)."""
    from mcpgw.cli import main

    handler = _handlers(build_parser())[("eval",)]
    assert isinstance(handler, LazyHandler)
    monkeypatch.setitem(sys.modules, handler.module, None)  # importing it now fails, as a broken feature's would
    assert ("eval",) in _handlers(build_parser())
    with pytest.raises(SystemExit) as shown:
        main(["--help"])
    assert shown.value.code == 0 and re.search(r"^\s+eval\b", capsys.readouterr().out, re.M)
    with pytest.raises(SystemExit) as helped:
        main(["eval", "--help"])  # its own options are the composition root's: no import needed
    assert helped.value.code == 0
    with pytest.raises(ImportError, match=re.escape(handler.module)):  # the command line does not swallow it
        main(["eval"])
    with pytest.raises(AttributeError, match="no_such_command"):  # a handler its module lacks: the same
        LazyHandler("mcpgw.commands", "no_such_command")(argparse.Namespace())


def _calls(tree: ast.AST, attribute: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute
    ]


def test_no_feature_package_registers_commands():
    offenders = []
    for package in FEATURES:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else ():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for line in _calls(tree, "add_parser") + _calls(tree, "add_subparsers"):
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "register commands in mcpgw/commands/, not in features: " + ", ".join(offenders)


def test_the_root_does_not_swallow_a_broken_feature():
    """`except ImportError` around our own packages would silently remove their commands."""
    ours = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    offenders = []
    for path in sorted((ROOT / "mcpgw").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            caught = {getattr(h.type, "id", None) for h in node.handlers}
            if not caught & {"ImportError", "ModuleNotFoundError"}:
                continue
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                module = (
                    inner.module
                    if isinstance(inner, ast.ImportFrom)
                    else inner.names[0].name
                    if isinstance(inner, ast.Import)
                    else None
                )
                if module and module.split(".")[0] in ours:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} ({module})")
    assert offenders == []


def test_servers_given_twice_add_up():
    """`--servers time --servers everything` kept only `everything` (argparse's last-one-wins), silently."""
    from mcpgw.cli import build_parser

    parser = build_parser()
    for argv in (
        ["serve"],
        ["run", "tasks.json", "--model", "m"],
        ["drift", "--cassette", "c"],
        ["servers", "install"],
        ["connect", "mcpbench"],
    ):
        args = parser.parse_args([*argv, "--servers", "time", "--servers", "everything", "fetch"])
        assert args.servers == ["time", "everything", "fetch"], argv


def test_time_limits_and_run_names_that_mean_nothing_are_refused(capsys):
    """`lock check --timeout -5` reported every server "did not become ready within -5s"; `serve --run ''`
    filed untagged lanes under an empty run id."""
    from mcpgw.cli import build_parser, main

    parser = build_parser()
    for argv in (
        ["lock", "check", "--timeout", "-5"],
        ["lock", "refresh", "--timeout", "0"],
        ["servers", "install", "--timeout", "nan"],
    ):
        with pytest.raises(SystemExit) as refused:
            parser.parse_args(argv)
        assert refused.value.code == 2 and "a positive number of seconds" in capsys.readouterr().err, argv
    assert main(["serve", "--run", " ", "--port", "0"]) == 2
    assert "--run names the run" in capsys.readouterr().err
