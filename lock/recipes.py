"""Build recipes of source entries: the steps each kind runs, and the environment they run in.

A recipe is one of (or `python`/`node` followed by `steps`):

    build: {python: {version: "3.11", requirements: requirements.txt, exclude_newer: "2025-09-03T00:00:00Z"}}
    build: {python: {project: ".", packages: ["extra==1.0"]}}
    build: {python: {dependencies_of: pyproject.toml}}     (its dependencies, not the project)
    build: {python: {version: "3.11", lock: uv.lock}}       (exactly the project's uv.lock, as `uv run`)
    build: {python: {requirements: requirements.txt, reinstall: [urllib3]}}
    build: {node: {install: ci, script: build, add: ["typescript@5.9.2"]}}
    build: {steps: [["make"], ["./configure", "--x"]]}

Python builds get their own virtual environment made by uv with the machine's
interpreter (`version`); `exclude_newer` resolves floating dependencies as of
a date, so a 2025 server is not handed a 2026 SDK it cannot import; `lock`
installs the project's own uv.lock unchanged (`uv sync --frozen`: what `uv run`
in the project runs); `reinstall` installs these packages once more, alone, after the
rest: uv unpacks wheels in parallel, so when two packages write the same folder
(urllib3-future writes into urllib3/) which file wins varies from one build to the
next, and a mixed folder does not import. Node builds install the package's own lock file (`npm
ci`) and run its build script.
Where a build lives, and how the gateway starts a built entry, is lock.install_lookup.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from mcpgw.lock.bytecode import compile_command
from mcpgw.lock.recipe_syntax import Recipe, RecipeError


def uv_binary() -> str:
    """uv from PATH, else the one installed beside this Python (the `uv` wheel)."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found:
        return found
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return "uv"


def build_steps(recipe: Recipe, tree: Path, env_dir: Path) -> list[tuple[str, list[str]]]:
    """(step name, argv) in order; every command runs with the tree as its working directory."""
    steps: list[tuple[str, list[str]]] = []
    if recipe.python is not None:
        steps += _python_steps(recipe.python, tree, env_dir)
    if recipe.node is not None:
        steps += _node_steps(recipe.node, tree)
    for argv in recipe.steps:
        steps.append((" ".join(argv[:2]), list(argv)))
    return steps


def _python_steps(py: dict[str, Any], tree: Path, env_dir: Path) -> list[tuple[str, list[str]]]:
    uv, version = uv_binary(), str(py.get("version", "3.11"))
    if py.get("lock"):  # the environment `uv run` makes in the project: its lock file, nothing re-resolved
        if not (tree / "uv.lock").is_file():
            raise RecipeError("python: lock: there is no uv.lock in the source folder")
        return [
            ("uv sync", [uv, "sync", "--frozen", "--no-dev", "--python", version]),
            ("compile bytecode", compile_command(env_dir)),
        ]
    target = [uv, "pip", "install", "--python", str(env_dir / "bin" / "python")]
    if py.get("exclude_newer"):
        target += ["--exclude-newer", str(py["exclude_newer"])]
    install = list(target)
    if py.get("requirements"):
        install += ["-r", str(py["requirements"])]
    if py.get("project"):
        install += [str(py["project"])]
    if py.get("dependencies_of"):  # a pyproject that lists what it needs but cannot be built itself
        install += _pyproject_dependencies(tree / str(py["dependencies_of"]))
    install += [str(p) for p in py.get("packages") or []]
    steps = [("venv", [uv, "venv", "--quiet", "--python", version, str(env_dir)]), ("pip install", install)]
    if py.get("reinstall"):  # the same versions, whole again: each named package's files written last
        again = list(target)
        for name in py["reinstall"]:
            again += ["--reinstall-package", str(name), str(name)]
        steps.append(("reinstall", again))
    return [*steps, ("compile bytecode", compile_command(env_dir))]


def _node_steps(node: dict[str, Any], tree: Path) -> list[tuple[str, list[str]]]:
    mode = node.get("install", "ci")
    if mode == "ci" and not (tree / "package-lock.json").exists():
        mode = "install"
    steps = [(f"npm {mode}", ["npm", mode, "--no-audit", "--no-fund"])]
    if node.get("add"):
        steps.append(("npm add", ["npm", "install", "--no-save", "--no-audit", "--no-fund", *node["add"]]))
    if node.get("script"):
        steps.append((f"npm run {node['script']}", ["npm", "run", str(node["script"])]))
    return steps


def _pyproject_dependencies(path: Path) -> list[str]:
    import tomllib

    try:
        return [str(d) for d in tomllib.loads(path.read_text())["project"]["dependencies"]]
    except (OSError, ValueError, KeyError) as exc:
        raise RecipeError(f"cannot read [project] dependencies of {path.name}: {exc}") from None


def build_env(tree: Path, env_dir: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment builds and launches run in: the server's own bin folders first on PATH."""
    env = dict(base)
    paths = [str(env_dir / "bin"), str(tree / "node_modules" / ".bin")]
    env["PATH"] = os.pathsep.join([*paths, env.get("PATH", os.defpath)])
    if (env_dir / "bin" / "python").exists():
        env["VIRTUAL_ENV"] = str(env_dir)
    env["UV_PYTHON_DOWNLOADS"] = "never"  # only the machine's interpreters; never a download
    env["UV_PROJECT_ENVIRONMENT"] = str(env_dir)  # `uv sync` fills the build's env, not the tree's .venv
    return env
