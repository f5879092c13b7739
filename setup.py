"""Build hook: one import package, `mcpgw`, and built packages carry the embedded default cassette.

The product's parts stay visible at the top of the repository (gateway/, recorder/, replay/,
evaluator/, ...), but they install as subpackages of `mcpgw` (mcpgw.gateway, mcpgw.recorder, ...):
`package_dir` maps each folder to its name, so the wheel's only top-level name is `mcpgw` and it
shadows nothing on PyPI (`llm`, `runs`, `lock` ... are other projects' names there).

The default cassette lives in the repository at cassettes/default/data.mdb (the lead re-records it
there); the wheel gets a copy at mcpgw/cassette/shipped/default/data.mdb, which
mcpgw.cassette.embedded finds. Everything else about the build is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
CASSETTE = Path("cassettes") / "default" / "data.mdb"
# The folders that are subpackages of mcpgw (mcpgw/ itself is the root package).
PARTS = ("gateway", "cassette", "recorder", "replay", "evaluator", "llm", "runs", "harness", "lock", "telemetry")


def packages_and_folders() -> tuple[list[str], dict[str, str]]:
    """Every package under the root and the parts (a folder with __init__.py), and where each part lives."""
    folders = {"mcpgw": "mcpgw", **{f"mcpgw.{part}": part for part in PARTS}}
    packages = []
    for name, folder in folders.items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            rest = init.parent.relative_to(HERE / folder).parts
            if "__pycache__" not in rest:
                packages.append(".".join((name, *rest)))
    return packages, folders


class BuildWithDefaultCassette(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the repository's copy in place
            return
        source = HERE / CASSETTE
        if not source.is_file():
            raise SystemExit(f"mcpgw build: {CASSETTE} is missing; the wheel must carry the default cassette")
        target = Path(self.build_lib) / "mcpgw" / "cassette" / "shipped" / "default" / "data.mdb"
        self.mkpath(str(target.parent))
        self.copy_file(str(source), str(target))
        # The lock too: a pip-installed mcpgw serves `--profile local` from an empty folder (mcpgw.lock.config.default_lock).
        shipped_lock = Path(self.build_lib) / "mcpgw" / "lock" / "shipped" / "servers.lock.yaml"
        self.mkpath(str(shipped_lock.parent))
        self.copy_file(str(HERE / "servers.lock.yaml"), str(shipped_lock))


PACKAGES, FOLDERS = packages_and_folders()
setup(
    cmdclass={"build_py": BuildWithDefaultCassette},
    packages=PACKAGES,
    package_dir=FOLDERS,
    package_data={"mcpgw": ["py.typed"]},
)
