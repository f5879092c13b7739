"""Every `mcpgw` command's arguments, one module per command family.

The composition root owns the command line: feature packages expose their
handlers (`cmd_*(args) -> int`) and never register parsers themselves. A
handler is named by module and function and imported when its command runs
(`lazy`), so `mcpgw --help` does not import the evaluator, Ray or the lock
builders; tests/mcpgw/test_commands.py imports every handler so a broken
feature fails the suite instead of vanishing from the CLI.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

DEFAULT_CONFIG = "servers.lock.yaml"
DEFAULT_URL = "http://127.0.0.1:8765"

Handler = Callable[[argparse.Namespace], int]


class LazyHandler:
    """`module:function`, imported on first call."""

    def __init__(self, module: str, function: str) -> None:
        self.module, self.function = module, function

    def resolve(self) -> Handler:
        handler: Handler = getattr(importlib.import_module(self.module), self.function)
        return handler

    def __call__(self, args: argparse.Namespace) -> int:
        return int(self.resolve()(args) or 0)

    def __repr__(self) -> str:
        return f"LazyHandler({self.module}:{self.function})"


def lazy(module: str, function: str) -> LazyHandler:
    return LazyHandler(module, function)


def usage(parser: argparse.ArgumentParser) -> Handler:
    """For a command group typed without its action: its help, exit 2."""

    def show(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return show
