"""Where cassettes live: names that cannot escape the cassettes folder, or paths to existing ones.

Every command takes a cassette the same way: a plain name (`run1`, looked up in
`--cassettes-dir`) or the path of an existing cassette folder (`cassettes/run1`,
`/tmp/x/run1`, `cassettes/run1/runs/20261123-120000-000000`). New cassettes are
only ever created by name, inside the cassettes folder.

Writing (record, hybrid, `--log-cassette`, `merge -o`) is confined to the cassettes
folder, symlinks resolved: an outside path or a link is refused (to write elsewhere,
point `--cassettes-dir` there). `rm` removes only a directory holding a cassette (and
its replay logs), never a link: inside the folder, or outside when named by its path.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
from pathlib import Path
from typing import Any

from mcpgw.gateway.errors.tree import GatewayError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
CASSETTE_ENTRIES = {"data.mdb", "lock.mdb", "runs"}  # an LMDB environment, and the replay logs beside it
LMDB_MAGIC = 0xBEEFC0DE  # at byte 16 of data.mdb


def is_cassette(path: Path) -> bool:
    return (path / "data.mdb").is_file()


def cassette_path(cassettes_dir: Path, name: str, *, write: bool = False) -> Path:
    """The folder of cassette `name`; the path of an existing cassette folder is accepted as is.
    With `write`, the folder must lie inside `cassettes_dir` and not be a symlink (`confine`)."""
    candidate = Path(name)
    if ("/" in name or name.startswith(".")) and is_cassette(candidate):
        if write:
            confine(cassettes_dir, candidate)
        return candidate
    if not NAME_RE.match(name) or ".." in name:
        if "/" in name:
            raise GatewayError(
                f"invalid cassette name {name!r}: no cassette folder (data.mdb) there, and a new "
                "cassette is named without path separators (letters, digits, '_', '-', '.')"
            )
        raise GatewayError(f"invalid cassette name {name!r}: use letters, digits, '_', '-', '.' (no path separators)")
    path = Path(cassettes_dir) / name
    if write:
        confine(cassettes_dir, path)
    return path


def inside(cassettes_dir: Path, path: Path) -> bool:
    """Whether `path`, symlinks resolved, lies inside the cassettes folder."""
    return Path(cassettes_dir).resolve() in Path(path).resolve().parents


def confine(cassettes_dir: Path, path: Path) -> None:
    """Refuse to write to a cassette outside the cassettes folder, or through a symlink."""
    path = Path(path)
    if path.is_symlink():
        raise GatewayError(f"{path} is a symbolic link (to {os.readlink(path)}); mcpgw does not write through links")
    if not inside(cassettes_dir, path):
        raise GatewayError(
            f"{path} is outside the cassettes folder {cassettes_dir}/; mcpgw writes only there "
            f"(to write elsewhere, pass --cassettes-dir {path.parent})"
        )


def check_removable(cassettes_dir: Path, path: Path, *, named_by_path: bool = False) -> None:
    """Refuse to remove anything but a cassette directory: inside the cassettes folder, or, when the
    operator named it by its path, wherever it is; never a symlink, never a folder holding anything else."""
    from mcpgw.cassette.store import CassetteDamaged, CassetteFormatError, CassetteStore

    path = Path(path)
    if path.is_symlink():
        raise GatewayError(f"{path} is a symbolic link, not a cassette; not removed (remove the link itself with rm)")
    if not path.is_dir() or not (path / "data.mdb").is_file():
        raise GatewayError(f"no cassette at {path}")
    if not named_by_path:
        confine(cassettes_dir, path)
    others = sorted(
        p.name for p in path.iterdir() if p.name not in CASSETTE_ENTRIES or (p.name == "runs") != p.is_dir()
    )
    if others:
        raise GatewayError(f"{path} holds other files too ({', '.join(others[:5])}); not a cassette, not removed")
    with open(path / "data.mdb", "rb") as f:
        head = f.read(20)
    if len(head) < 20 or int.from_bytes(head[16:20], "little") != LMDB_MAGIC:
        raise GatewayError(f"{path / 'data.mdb'} is not an LMDB file; not a cassette, not removed")
    try:
        CassetteStore(path, create=False, readonly=True).env.close()
    except CassetteDamaged:
        pass  # a damaged cassette is still one: removing it is what its owner wants
    except CassetteFormatError as exc:  # LMDB, but someone else's data
        raise GatewayError(f"not removed: {exc}") from None


def existing_cassette(cassettes_dir: Path, name: str) -> Path:
    """`cassette_path`, for a cassette that must already exist: the error lists what does, nearest first."""
    path = cassette_path(cassettes_dir, name)
    if is_cassette(path):
        return path
    from mcpgw.cassette.embedded import NAME, shipped_default

    shipped = shipped_default() if name == NAME else None  # what a bare `mcpgw serve` replays from any folder
    if shipped is not None:
        return shipped
    known = cassette_names(cassettes_dir)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(close)}?" if close else f" (cassettes there: {', '.join(known) or 'none'})"
    raise GatewayError(f"no cassette {name!r} in {cassettes_dir}/{hint}")


def cassette_names(cassettes_dir: Path) -> list[str]:
    folder = Path(cassettes_dir)
    return sorted(p.name for p in folder.iterdir() if is_cassette(p)) if folder.is_dir() else []


def add_dir_option(parser: Any, *, inherited: bool = False) -> None:
    """`--cassettes-dir`, accepted before and after a subcommand (`cassette --cassettes-dir D ls`, `cassette ls --cassettes-dir D`)."""
    parser.add_argument(
        "--cassettes-dir",
        default=argparse.SUPPRESS if inherited else "cassettes",
        metavar="DIR",
        help="folder of named cassettes (default: ./cassettes)",
    )
