"""The wheel, built as pip builds it, holds every package of the tree and the default cassette.

An editable install reads the sources in place, so it cannot notice a package missing from the
wheel; this test builds the real wheel (`uv build`, isolated like pip) and compares it with the
tree. The full install-and-serve check of the wheel is scripts/wheel_smoke.py, run by .ci/run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOT_SHIPPED = {"tests"}  # top-level packages that stay in the repository


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("dist")
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is a dependency of mcpgw; reinstall with pip install -e ."
    # sdist first, then the wheel from the unpacked sdist (as pip does from a git URL): a stale
    # build/ folder in the checkout cannot leak into it, and MANIFEST.in is tested too.
    build = subprocess.run(
        [uv, "build", "--quiet", "-o", str(out), str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (path,) = out.glob("mcpgw-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


def tree_modules() -> set[str]:
    """Every .py file of every package in the repository (a package: a top-level folder with
    __init__.py), named where the wheel puts it: mcpgw/ as it is, every other folder under mcpgw/."""
    found = set()
    for init in ROOT.glob("*/__init__.py"):
        if init.parent.name in NOT_SHIPPED:
            continue
        for source in init.parent.rglob("*.py"):
            if "__pycache__" not in source.parts:
                path = source.relative_to(ROOT).as_posix()
                found.add(path if path.startswith("mcpgw/") else f"mcpgw/{path}")
    return found


def test_the_wheel_installs_one_top_level_name(wheel):
    """`gateway`, `llm`, `runs`, `lock` ... are other projects' names on PyPI: the wheel installs only `mcpgw`."""
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"mcpgw"}, tops


def test_wheel_holds_every_module_of_the_tree(wheel):
    names = set(wheel.namelist())
    expected = tree_modules()
    for package in (
        "mcpgw/lock/__init__.py",
        "mcpgw/evaluator/judges/__init__.py",
        "mcpgw/evaluator/report/__init__.py",
        "mcpgw/cassette/embedded.py",
        "mcpgw/cli.py",
        "mcpgw/telemetry/__init__.py",
    ):
        assert package in expected
    assert expected - names == set(), (
        "in the tree but not in the wheel (a new top-level folder needs its name in setup.py's PARTS)"
    )
    assert not any(name.startswith("tests/") for name in names)


def test_wheel_carries_the_default_cassette_byte_for_byte(wheel):
    shipped = wheel.read("mcpgw/cassette/shipped/default/data.mdb")
    assert shipped == (ROOT / "cassettes" / "default" / "data.mdb").read_bytes()
    assert not any(name.endswith("lock.mdb") for name in wheel.namelist())


def test_wheel_entry_point_and_pinned_sdk(wheel):
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    (line,) = [l for l in wheel.read(entry_points).decode().splitlines() if l.startswith("mcpgw =")]
    module, function = line.split("=", 1)[1].strip().split(":")
    source = module.replace(".", "/") + ".py"
    assert source in wheel.namelist() and f"def {function}(" in wheel.read(source).decode()
    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = [line for line in wheel.read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")]
    assert "Requires-Dist: mcp==2.3.0" in requires


def test_lock_file_pins_every_dependency_of_pyproject():
    """requirements.lock (used by the README's commands and .ci/run) pins each dependency exactly,
    and each pin satisfies pyproject's range (library users keep the ranges)."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    for requirement in wanted:
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is not pinned in requirements.lock"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement.specifier}"
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme.count("-c requirements.lock") >= 2 and "-c requirements.lock" in ci


def test_bare_serve_from_another_folder_replays_the_shipped_cassette(tmp_path):
    """Run from an empty folder (as after an editable install): the shipped default is played in
    place, read-only, and the call log goes to ./cassettes/ of that folder."""
    import hashlib
    import os
    import time

    import httpx

    from tests.conftest import free_port

    shipped = ROOT / "cassettes" / "default" / "data.mdb"
    before = hashlib.sha256(shipped.read_bytes()).hexdigest()
    port = free_port()
    env = {**os.environ, "PATH": "/nonexistent", "PYTHONPATH": str(ROOT)}
    with open(tmp_path / "gateway.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpgw.cli", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/status", timeout=2).json()
                if status["servers"] and all(s["state"] != "starting" for s in status["servers"].values()):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert status is not None, (tmp_path / "gateway.log").read_text()
        assert status["mode"] == "replay" and len(status["servers"]) >= 10
        assert all(s["state"] == "ready" and s["pid"] is None for s in status["servers"].values())
    finally:
        process.terminate()
        process.wait(timeout=15)
    # the log is kept under ./cassettes/default/runs/ (the played copy stays untouched, elsewhere)
    assert [p.name for p in (tmp_path / "cassettes").iterdir()] == ["default"]
    assert not (tmp_path / "cassettes" / "default" / "data.mdb").exists()
    assert [p.name.split("-")[-1] for p in (tmp_path / "cassettes" / "default" / "runs").iterdir()] == ["replay"]
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() == before
