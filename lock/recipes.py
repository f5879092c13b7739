"""Build recipes of source entries, and where each build lives in the cache.

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
A build's directory is keyed by everything that decides its content
(repository, commit, path, recipe), so a changed pin builds afresh beside the
old one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from gateway.config import ServerSpec
from gateway.lock.recipe_syntax import Recipe, RecipeError
from gateway.lock.bytecode import compile_command

BUILT_MARKER = ".mcpgw-build.json"
FAILED_MARKER = ".mcpgw-failed.json"
# -- where things live ---------------------------------------------------------------


def cache_root() -> Path:
    """`MCPGW_CACHE`, else the user's cache folder: never inside the repository."""
    explicit = os.environ.get("MCPGW_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpgw"


def build_key(spec: ServerSpec) -> str:
    assert spec.source is not None
    content = {"repo": spec.source.repo, "commit": spec.source.commit, "path": spec.source.path, "build": spec.build}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def build_dir(spec: ServerSpec, root: Path | None = None) -> Path:
    return (root or cache_root()) / "builds" / f"{spec.id}-{build_key(spec)}"


def built_info(spec: ServerSpec, root: Path | None = None, *, pending: bool = False) -> dict[str, Any] | None:
    """The marker a finished, verified build leaves; None when the entry is not built
    (a build still being verified counts only when `pending` is asked for)."""
    try:
        info = json.loads((build_dir(spec, root) / BUILT_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return info if pending or not info.get("pending") else None


def failed_info(spec: ServerSpec, root: Path | None = None) -> dict[str, Any] | None:
    """Why the last build of this entry failed, when it did."""
    try:
        return json.loads((build_dir(spec, root) / FAILED_MARKER).read_text())
    except (OSError, ValueError):
        return None


# -- what a build runs ---------------------------------------------------------------


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
        return [("uv sync", [uv, "sync", "--frozen", "--no-dev", "--python", version]),
                ("compile bytecode", compile_command(env_dir))]
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


# -- how an installed source entry is launched ---------------------------------------


def installed_spec(spec: ServerSpec, root: Path | None = None, *, pending: bool = False) -> ServerSpec | None:
    """The entry as it runs from its build: command found in the build's own environment,
    working directory inside the built tree. None when it has not been built.
    The result has no `build` left: it is ready to launch as it is."""
    if spec.source is None or spec.build is None:
        return spec
    if built_info(spec, root, pending=pending) is None:
        return None
    home = build_dir(spec, root)
    tree, env_dir = home / "src", home / "env"
    command = spec.command or ""
    if command and "/" not in command:
        path = os.pathsep.join([str(env_dir / "bin"), str(tree / "node_modules" / ".bin"), os.environ.get("PATH", "")])
        command = shutil.which(command, path=path) or command
    cwd = tree / spec.cwd if spec.cwd else tree
    values = dict(spec.env_values)
    values.setdefault("PATH", os.pathsep.join([str(env_dir / "bin"), str(tree / "node_modules" / ".bin"),
                                               os.environ.get("PATH", os.defpath)]))
    if (env_dir / "bin" / "python").exists():
        values.setdefault("VIRTUAL_ENV", str(env_dir))
    return replace(spec, command=command, cwd=str(cwd), env_values=values, build=None)
