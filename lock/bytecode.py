"""Python environments a server runs from are compiled to bytecode when installed.

A Python server imports hundreds of modules at every start. Without their
`.pyc` files it compiles them all from source each time, and where
PYTHONDONTWRITEBYTECODE is set (CI images, this project's own machines) it
never keeps the result: medical_calculator's start took 3.9-4.4 s of CPU that
way against 1.6-2.0 s compiled (measured). Neither uv's tool environments nor
`uv pip install` compile by default, so `servers install` does it once, in the
server's own environment and with its own interpreter (so the bytecode matches
the Python that will load it). Already-compiled files are skipped, so running it
again is cheap.
"""

from __future__ import annotations

from pathlib import Path


def compile_command(prefix: Path) -> list[str]:
    """The command that compiles everything under the virtual environment `prefix`, run with
    that environment's own Python. It exits 0 even if some file does not compile (packages
    ship test data in other Python dialects): that file is then compiled at import, as before."""
    script = "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)"
    return [str(prefix / "bin" / "python"), "-c", script, str(prefix)]
