"""Source entries in the lock: what a recipe may say, the one-line errors for what it may not,
and the commands each recipe runs."""

from __future__ import annotations

import pytest

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.lock.config import parse_config
from mcpgw.lock.recipe_syntax import RecipeError, parse_recipe
from mcpgw.lock.recipes import build_env, build_steps

COMMIT = "09e52332b22428bf891be59047e01cb9adc063b4"


def entry(source: str, build: str) -> str:
    return f"version: 1\nservers:\n  s:\n    command: python\n    args: [server.py]\n{source}{build}"


SOURCE = f'    source: {{repo: Accenture/mcp-bench, commit: "{COMMIT}", path: mcp_servers/x}}\n'


@pytest.mark.parametrize(
    "source, build, message",
    [
        (SOURCE, "", "l.yaml:6: server 's': a 'source' entry needs a 'build' recipe"),
        ("", "    build: {steps: [[make]]}\n", "l.yaml:6: server 's': 'build' needs a 'source' to build from"),
        (
            SOURCE.replace(COMMIT, "09e5233"),
            "    build: {steps: [[make]]}\n",
            "source commit must be the full 40-hex commit",
        ),
        (
            SOURCE.replace("Accenture/mcp-bench", "mcp-bench"),
            "    build: {steps: [[make]]}\n",
            "source repo must be 'owner/name'",
        ),
        (SOURCE.replace("mcp_servers/x", "../x"), "    build: {steps: [[make]]}\n", "source path must stay inside"),
        (SOURCE, "    build: {python: {}, node: {}}\n", "build: one of 'python' or 'node', not both"),
        (SOURCE, "    build: {python: {pip: x}}\n", "build: python: unknown key(s) ['pip']"),
        (SOURCE, "    build: {steps: [make]}\n", "build: 'steps' must be a list of commands"),
        (SOURCE, "    build: {python: {lock: poetry.lock}}\n", "build: python: lock must be 'uv.lock'"),
        (
            SOURCE,
            "    build: {python: {requirements: r.txt, reinstall: urllib3}}\n",
            "build: python: reinstall must be a list of package names",
        ),
        (
            SOURCE,
            "    build: {python: {lock: uv.lock, exclude_newer: '2025-09-03'}}\n",
            "build: python: 'lock' installs the lock file as it is: only 'version' may go with it",
        ),
    ],
)
def test_bad_source_entries_are_one_line_errors(source, build, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(entry(source, build), "l.yaml")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_recipes_become_commands(tmp_path):
    env = tmp_path / "env"
    python = build_steps(
        parse_recipe(
            {"python": {"version": "3.11", "requirements": "requirements.txt", "exclude_newer": "2025-09-03T00:00:00Z"}}
        ),
        tmp_path,
        env,
    )
    assert [name for name, _ in python] == ["venv", "pip install", "compile bytecode"]
    assert python[2][1][0] == str(env / "bin" / "python")  # compiled by the interpreter that will load it
    assert python[0][1][1:] == ["venv", "--quiet", "--python", "3.11", str(env)]
    assert python[1][1][1:] == [
        "pip",
        "install",
        "--python",
        str(env / "bin" / "python"),
        "--exclude-newer",
        "2025-09-03T00:00:00Z",
        "-r",
        "requirements.txt",
    ]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["mcp[cli]>=1.9.2", "numpy"]\n')
    deps = build_steps(parse_recipe({"python": {"dependencies_of": "pyproject.toml"}}), tmp_path, env)
    assert deps[1][1][-2:] == ["mcp[cli]>=1.9.2", "numpy"]
    node = build_steps(
        parse_recipe({"node": {"install": "ci", "script": "build", "add": ["typescript@5.9.2"]}, "steps": [["tsc"]]}),
        tmp_path,
        env,
    )
    # no package-lock.json here: `ci` needs one, so it installs
    assert [argv for _, argv in node] == [
        ["npm", "install", "--no-audit", "--no-fund"],
        ["npm", "install", "--no-save", "--no-audit", "--no-fund", "typescript@5.9.2"],
        ["npm", "run", "build"],
        ["tsc"],
    ]


def test_reinstall_writes_the_named_packages_again_after_the_rest(tmp_path):
    """Two packages writing one folder (urllib3-future into urllib3/) are unpacked at once by uv; the named
    package is installed once more, alone and as of the same date, so its files are whole (issue 22)."""
    env = tmp_path / "env"
    steps = build_steps(
        parse_recipe(
            {"python": {"requirements": "requirements.txt", "exclude_newer": "2025-09-03", "reinstall": ["urllib3"]}}
        ),
        tmp_path,
        env,
    )
    assert [name for name, _ in steps] == ["venv", "pip install", "reinstall", "compile bytecode"]
    assert steps[2][1][1:] == [
        "pip",
        "install",
        "--python",
        str(env / "bin" / "python"),
        "--exclude-newer",
        "2025-09-03",
        "--reinstall-package",
        "urllib3",
        "urllib3",
    ]


def test_a_uv_lock_recipe_installs_the_lock_as_it_is(tmp_path):
    recipe = parse_recipe({"python": {"version": "3.11", "lock": "uv.lock"}})
    with pytest.raises(RecipeError, match="there is no uv.lock in the source folder"):
        build_steps(recipe, tmp_path, tmp_path / "env")
    (tmp_path / "uv.lock").write_text("version = 1\n")
    (name, argv), (compile_name, _) = build_steps(recipe, tmp_path, tmp_path / "env")
    assert name == "uv sync" and argv[1:] == ["sync", "--frozen", "--no-dev", "--python", "3.11"]
    assert compile_name == "compile bytecode"  # as every Python build
    # uv sync fills the build's own environment, never a .venv in the tree
    assert build_env(tmp_path, tmp_path / "env", {})["UV_PROJECT_ENVIRONMENT"] == str(tmp_path / "env")
