"""Cassette names: plain names that cannot escape the cassettes folder."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.errors import GatewayError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def cassette_path(cassettes_dir: Path, name: str) -> Path:
    """The folder of cassette `name`; an existing folder path is accepted as is."""
    candidate = Path(name)
    if ("/" in name or name.startswith(".")) and (candidate / "data.mdb").exists():
        return candidate
    if not NAME_RE.match(name) or ".." in name:
        raise GatewayError(f"invalid cassette name {name!r}: use letters, digits, '_', '-', '.' (no path separators)")
    return cassettes_dir / name
