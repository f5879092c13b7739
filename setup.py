"""Build hook: built packages carry the embedded default cassette.

It lives in the repository at cassettes/default/data.mdb (the lead re-records it there);
the wheel gets a copy at recorder/shipped/default/data.mdb, which recorder.embedded finds.
Everything else about the build is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CASSETTE = Path("cassettes") / "default" / "data.mdb"


class BuildWithDefaultCassette(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the repository's copy in place
            return
        source = Path(__file__).resolve().parent / CASSETTE
        if not source.is_file():
            raise SystemExit(f"mcpgw build: {CASSETTE} is missing; the wheel must carry the default cassette")
        target = Path(self.build_lib) / "recorder" / "shipped" / "default" / "data.mdb"
        self.mkpath(str(target.parent))
        self.copy_file(str(source), str(target))
        # The lock too: a pip-installed mcpgw serves `--profile local` from an empty folder (gateway.config.default_lock).
        lock = Path(__file__).resolve().parent / "servers.lock.yaml"
        shipped_lock = Path(self.build_lib) / "gateway" / "shipped" / "servers.lock.yaml"
        self.mkpath(str(shipped_lock.parent))
        self.copy_file(str(lock), str(shipped_lock))


setup(cmdclass={"build_py": BuildWithDefaultCassette})
