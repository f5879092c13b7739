"""Where the recorder finds things (the lock, the cassette, the venv), its limits, and its `Failure`."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent  # the checkout: scripts/default_cassette/ is two below it
CONFIG = ROOT / "servers.lock.yaml"
PROFILE = "local"
CASSETTES = ROOT / "cassettes"
CASSETTE = CASSETTES / "default"
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = VENV_BIN / "python" if (VENV_BIN / "python").exists() else Path(sys.executable)
STEP_TIMEOUT = 90.0
SECRET_NAMES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL")


class Failure(Exception):
    """Something a person has to look at; the message says what."""
