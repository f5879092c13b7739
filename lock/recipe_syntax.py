"""A source entry's `build:` recipe as written in the lock, checked (see lock.recipes for what
each kind does). Apart from recipes.py so that reading the lock (lock.config) can check recipes
without importing where builds live."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_PYTHON_KEYS = {
    "version",
    "requirements",
    "project",
    "dependencies_of",
    "packages",
    "exclude_newer",
    "lock",
    "reinstall",
}
_NODE_KEYS = {"install", "script", "add"}


class RecipeError(ValueError):
    pass


@dataclass(frozen=True)
class Recipe:
    python: dict[str, Any] | None = None
    node: dict[str, Any] | None = None
    steps: tuple[tuple[str, ...], ...] = ()


def parse_recipe(raw: Any) -> Recipe:
    if not isinstance(raw, dict) or not raw:
        raise RecipeError("expected a mapping with 'python', 'node' and/or 'steps'")
    unknown = set(raw) - {"python", "node", "steps"}
    if unknown:
        raise RecipeError(f"unknown key(s) {sorted(unknown)}; allowed: python, node, steps")
    python, node = raw.get("python"), raw.get("node")
    if python is not None and node is not None:
        raise RecipeError("one of 'python' or 'node', not both")
    for name, section, keys in (("python", python, _PYTHON_KEYS), ("node", node, _NODE_KEYS)):
        if section is None:
            continue
        if not isinstance(section, dict):
            raise RecipeError(f"'{name}' must be a mapping")
        bad = set(section) - keys
        if bad:
            raise RecipeError(f"{name}: unknown key(s) {sorted(bad)}; allowed: {sorted(keys)}")
    if python is not None and python.get("requirements") and python.get("project"):
        raise RecipeError("python: 'requirements' or 'project', not both")
    if python is not None and python.get("lock") is not None:
        if python["lock"] != "uv.lock":
            raise RecipeError("python: lock must be 'uv.lock' (the only lock file uv installs as it is)")
        if set(python) - {"version", "lock"}:
            raise RecipeError("python: 'lock' installs the lock file as it is: only 'version' may go with it")
    if python is not None and python.get("reinstall") is not None:
        names = python["reinstall"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise RecipeError("python: reinstall must be a list of package names")
    if node is not None and node.get("install", "ci") not in ("ci", "install"):
        raise RecipeError("node: install must be 'ci' or 'install'")
    steps = raw.get("steps") or []
    if not isinstance(steps, list) or not all(
        isinstance(s, list) and s and all(isinstance(a, str) for a in s) for s in steps
    ):
        raise RecipeError("'steps' must be a list of commands, each a non-empty list of strings")
    return Recipe(
        dict(python) if python is not None else None,
        dict(node) if node is not None else None,
        tuple(tuple(s) for s in steps),
    )
