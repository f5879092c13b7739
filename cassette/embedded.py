"""Where the embedded default cassette is, however mcpgw was installed.

The repository keeps it at cassettes/default (a checkout run from its root finds it by name);
a built wheel carries a copy inside this package (setup.py puts it there), so a wheel install
replays it from any working directory while its call logs go to the user's own ./cassettes/.
"""

from __future__ import annotations

from pathlib import Path

NAME = "default"
PACKAGED = Path(__file__).resolve().parent / "shipped" / NAME  # inside an installed wheel
CHECKOUT = Path(__file__).resolve().parent.parent / "cassettes" / NAME  # beside the sources (editable install)


def shipped_default() -> Path | None:
    """The default cassette that came with this installation, if any."""
    for candidate in (PACKAGED, CHECKOUT):
        if (candidate / "data.mdb").is_file():
            return candidate
    return None


def default_cassette(cassettes_dir: Path) -> Path | None:
    """The cassette a bare `mcpgw serve` replays: the user's own `<cassettes_dir>/default` first
    (in a checkout that is the shipped one), else the one installed with the package."""
    own = cassettes_dir / NAME
    if (own / "data.mdb").is_file():
        return own
    return shipped_default()
