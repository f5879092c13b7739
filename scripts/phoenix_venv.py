"""Prints where the tests' Arize Phoenix environment lives: MCPGW_TEST_PHOENIX_VENV, else a folder of the user
cache named after the digest of its pin (tests/telemetry/phoenix.txt; a changed pin makes a new environment)."""

import hashlib
import os
from pathlib import Path

pins = Path(__file__).resolve().parent.parent / "tests" / "telemetry" / "phoenix.txt"
digest = hashlib.sha256(pins.read_bytes()).hexdigest()[:12]
cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
print(os.environ.get("MCPGW_TEST_PHOENIX_VENV") or cache / "mcpgw-test" / f"phoenix-{digest}")
