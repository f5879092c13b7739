"""Where cassettes live: names that cannot escape the cassettes folder, or paths to existing ones.

Every command takes a cassette the same way: a plain name (`run1`, looked up in
`--cassettes-dir`) or the path of an existing cassette folder (`cassettes/run1`,
`/tmp/x/run1`, `cassettes/run1/runs/20261123-120000-000000`). New cassettes are
only ever created by name, inside the cassettes folder.
"""

from __future__ import annotations

import argparse
import difflib
import re
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def is_cassette(path: Path) -> bool:
    return (path / "data.mdb").is_file()


def cassette_path(cassettes_dir: Path, name: str) -> Path:
    """The folder of cassette `name`; the path of an existing cassette folder is accepted as is."""
    candidate = Path(name)
    if ("/" in name or name.startswith(".")) and is_cassette(candidate):
        return candidate
    if not NAME_RE.match(name) or ".." in name:
        if "/" in name:
            raise GatewayError(f"invalid cassette name {name!r}: no cassette folder (data.mdb) there, and a new "
                               "cassette is named without path separators (letters, digits, '_', '-', '.')")
        raise GatewayError(f"invalid cassette name {name!r}: use letters, digits, '_', '-', '.' (no path separators)")
    return Path(cassettes_dir) / name


def existing_cassette(cassettes_dir: Path, name: str) -> Path:
    """`cassette_path`, for a cassette that must already exist: the error lists what does, nearest first."""
    path = cassette_path(cassettes_dir, name)
    if is_cassette(path):
        return path
    known = cassette_names(cassettes_dir)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(close)}?" if close else f" (cassettes there: {', '.join(known) or 'none'})"
    raise GatewayError(f"no cassette {name!r} in {cassettes_dir}/{hint}")


def cassette_names(cassettes_dir: Path) -> list[str]:
    folder = Path(cassettes_dir)
    return sorted(p.name for p in folder.iterdir() if is_cassette(p)) if folder.is_dir() else []


def add_dir_option(parser: Any, *, inherited: bool = False) -> None:
    """`--cassettes-dir`, accepted before and after a subcommand (`cassette --cassettes-dir D ls`, `cassette ls --cassettes-dir D`)."""
    parser.add_argument("--cassettes-dir", default=argparse.SUPPRESS if inherited else "cassettes", metavar="DIR",
                        help="folder of named cassettes (default: ./cassettes)")
