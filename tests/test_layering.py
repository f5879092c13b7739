"""The layering stays visible: the core imports none of the features, and no package cycle exists.

Every part installs under one import name, `mcpgw` (setup.py maps the folders):
gateway/   mcpgw.gateway, the core: upstreams, router, catalog, validation, the MCP server (imports only itself)
recorder/, replay/, evaluator/, ...   mcpgw.recorder, ...: features built on the core
lock/      mcpgw.lock: installing, building, refreshing, checking: imports the core; recorder/ and
           replay/ (the record and replay the gateway serves) import it no more than gateway/ does
mcpgw/     the composition root: the only package that may import all of them

Imports are read from the source: absolute ones, relative ones (resolved against the importing
module) and `importlib.import_module("...")` / `__import__("...")` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

ROOT_PACKAGE = "mcpgw"
PARTS = (
    "gateway",
    "cassette",
    "recorder",
    "replay",
    "evaluator",
    "llm",
    "runs",
    "harness",
    "lock",
    "telemetry",
)  # setup.py's PARTS
CORE = "gateway"
LOCK = "lock"
NOT_IMPORTING_LOCK = ("gateway", "cassette", "recorder", "replay")  # what serving needs; `lock` builds on it
NOT_OURS = {".venv", "build", "dist", "__pycache__", "node_modules", ".git"}


def packages() -> set[str]:
    """The folders that are packages: the parts and the root."""
    return {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name != "tests"}


def import_name(path: Path) -> str:
    """The dotted name a source file imports as (gateway/x.py -> mcpgw.gateway.x)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts and parts[0] in PARTS:
        parts.insert(0, ROOT_PACKAGE)
    return ".".join(parts)


def room(name: str) -> str | None:
    """The package (a part, or the root) an imported name belongs to, None when it is not ours."""
    pieces = name.split(".")
    if pieces[0] != ROOT_PACKAGE:
        return None
    return pieces[1] if len(pieces) > 1 and pieces[1] in PARTS else ROOT_PACKAGE


def imported_names(tree: ast.AST, module: str = "", is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module: statements at any depth (inside
    functions too), relative ones resolved against `module`, and `importlib.import_module("...")` /
    `__import__("...")` with a literal name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom):
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            base = anchor[: len(anchor) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                found.append((node.lineno, stem))
            else:  # from . import x: each name may be a module
                found += [(node.lineno, f"{stem}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
                or isinstance(node.func, ast.Name)
                and node.func.id in ("__import__", "import_module")
            )
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def package_sources() -> dict[str, Path]:
    """module name -> source, for every module of every package (the parts and the root)."""
    return {
        import_name(path): path
        for package in packages()
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def imports_of(path: Path) -> list[tuple[int, str]]:
    return imported_names(ast.parse(path.read_text(), str(path)), import_name(path), path.name == "__init__.py")


def imports_by_package() -> dict[str, dict[str, list[str]]]:
    """package -> imported project package -> the files that import it (top-level or inside functions)."""
    ours = packages()
    graph: dict[str, dict[str, list[str]]] = {name: {} for name in ours}
    for package in ours:
        for path in (ROOT / package).rglob("*.py"):
            for _, target in imports_of(path):
                top = room(target)
                if top in ours and top != package:
                    graph[package].setdefault(top, []).append(str(path.relative_to(ROOT)))
    return graph


def every_python_file() -> list[Path]:
    return [path for path in ROOT.rglob("*.py") if not NOT_OURS & set(path.relative_to(ROOT).parts)]


def test_nothing_imports_a_part_by_its_folder_name():
    """One import name: `gateway`, `llm`, `runs` ... are other projects' names on PyPI, and a
    missed one would work here (the repository root is on sys.path) and fail in the wheel."""
    stale = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in every_python_file()
        for line, name in imports_of(path)
        if name.split(".")[0] in PARTS
    ]
    assert stale == [], stale


def test_the_scan_resolves_relative_imports():
    source = "from . import tool_calls\nfrom ..tools.catalog import Catalog\nfrom ...recorder import store\n"
    names = [name for _, name in imported_names(ast.parse(source), "mcpgw.gateway.routing.router")]
    assert names == ["mcpgw.gateway.routing.tool_calls", "mcpgw.gateway.tools.catalog", "mcpgw.recorder"]


def test_the_core_imports_no_feature_package():
    graph = imports_by_package()
    assert {"gateway", "recorder", "replay", "evaluator", "mcpgw"} <= set(graph)
    assert graph[CORE] == {}, f"gateway/ must not import the features built on it: {graph[CORE]}"


# The design's drawing: which package may import which (mcpgw, the root, may import every one).
# A new edge is a design decision: draw it here, and in the README's Layout section.
MAY_IMPORT = {
    "gateway": set(),
    "cassette": {"gateway"},  # the cassette: store, keys, lanes, player, recorder
    "recorder": {"gateway", "cassette"},  # the call log and replay logs
    "replay": {"gateway", "cassette", "recorder"},
    "llm": {"gateway", "cassette", "recorder", "replay"},
    "evaluator": {"gateway", "cassette", "recorder"},
    "harness": {"gateway"},
    "lock": {"gateway", "cassette", "recorder"},
    "runs": {"gateway", "cassette", "recorder", "evaluator"},
    "telemetry": {"gateway", "cassette", "recorder"},  # spans and metrics of call-log records; wired in by mcpgw/ only
}


def test_feature_packages_import_only_what_the_design_draws():
    graph = imports_by_package()
    undrawn = {
        f"{package} -> {target}": files[:3]
        for package, targets in graph.items()
        if package != ROOT_PACKAGE
        for target, files in targets.items()
        if target not in MAY_IMPORT.get(package, set())
    }
    assert undrawn == {}, undrawn


def test_every_package_is_in_the_drawing():
    assert packages() - {ROOT_PACKAGE} <= set(MAY_IMPORT), packages() - {ROOT_PACKAGE} - set(MAY_IMPORT)


def lock_imports(package: str) -> list[str]:
    """file:line of each import of the `lock` package (or a module of it) inside `package`."""
    hits = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, name in imports_of(path):
            if room(name) == LOCK:
                hits.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return hits


def test_lock_is_a_top_level_feature_package():
    assert LOCK in packages() and not (ROOT / CORE / "lock").exists()
    # the lock's modules import the core (what the scan below would see if the core imported them back)
    assert CORE in imports_by_package()[LOCK]


def test_the_core_does_not_import_the_lock_feature():
    hits = [hit for package in NOT_IMPORTING_LOCK for hit in lock_imports(package)]
    assert hits == [], (
        "the core is handed the install lookup (lock.install_lookup, through gateway.upstreams.installs); it never imports lock/: "
        + "; ".join(hits)
    )


def test_the_core_knows_no_install_format():
    """Where installs are (the cache folder, build markers, npx / uvx records) is the lock's (lock/install_lookup.py); the
    core asks through the `Installs` it is handed (gateway/upstreams/installs.py) and reads no cache itself."""
    assert (ROOT / LOCK / "install_lookup.py").is_file() and not (ROOT / CORE / "upstreams" / "installed.py").exists()
    readers = [
        str(path.relative_to(ROOT))
        for path in (ROOT / CORE).rglob("*.py")
        if any(word in path.read_text() for word in ("MCPGW_CACHE", ".mcpgw-build", "builds/", "cache_root"))
    ]
    assert readers == [], readers


def test_the_lock_scan_sees_imports_inside_functions_and_by_name():
    source = (
        "import json\n"
        "def start():\n"
        "    from mcpgw.lock.installer import make_plan\n"
        "    import importlib\n"
        "    importlib.import_module('mcpgw.lock.check')\n"
        "    __import__('mcpgw.lock')\n"
        "    from mcpgw.locked import x\n"  # a different name that only starts alike
    )
    names = [name for _, name in imported_names(ast.parse(source))]
    assert {n for n in names if room(n) == LOCK} == {"mcpgw.lock.installer", "mcpgw.lock.check", "mcpgw.lock"}


def test_only_the_composition_root_imports_it():
    graph = imports_by_package()
    importers = {package: files[ROOT_PACKAGE] for package, files in graph.items() if ROOT_PACKAGE in files}
    assert importers == {}, importers


def test_the_package_graph_has_no_cycle():
    graph = imports_by_package()
    state: dict[str, str] = {}

    def visit(package: str, path: list[str]) -> None:
        state[package] = "open"
        for target in graph[package]:
            if state.get(target) == "open":
                cycle = path[path.index(target) :] + [target]
                raise AssertionError(f"import cycle {' -> '.join(cycle)} (e.g. {graph[package][target][0]})")
            if target not in state:
                visit(target, path + [target])
        state[package] = "done"

    for package in sorted(graph):
        if package not in state:
            visit(package, [package])


# The core's rooms, lowest first: a room imports only the rooms before it in this list (and itself).
# gateway/mcp_server.py, the core's own top, may import any room. Say a new room here and in gateway/__init__.py.
ROOMS = [
    "errors",
    "encoding",
    "runtime",
    "commandline",
    "specs",
    "tools",
    "upstreams",
    "routing",
    "sessions",
    "stdio",
    "http",
    "endpoints",
]


def room_of(name: str) -> str | None:
    """The core room a module name belongs to (mcpgw.gateway.tools.catalog -> tools), None outside the rooms."""
    pieces = name.split(".")
    if pieces[:2] == [ROOT_PACKAGE, CORE] and len(pieces) > 2 and pieces[2] in ROOMS:
        return pieces[2]
    return None


def face(room_name: str) -> list[str]:
    """The modules a room's __init__ names in __all__: what code outside the room may import."""
    tree = ast.parse((ROOT / CORE / room_name / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [ast.literal_eval(item) for item in node.value.elts]  # type: ignore[attr-defined]
    return []


def imports_named(path: Path) -> list[tuple[int, str]]:
    return names_imported(ast.parse(path.read_text(), str(path)), import_name(path), path.name == "__init__.py")


def names_imported(tree: ast.AST, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """imported_names, plus `package.name` for each name of a `from package import name` (it may be a module)."""
    found = imported_names(tree, module, is_package)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            ((_, base),) = imported_names(ast.Module(body=[node], type_ignores=[]), module, is_package)
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_the_rooms_are_the_core_s_folders_each_with_a_face_and_a_purpose():
    folders = sorted(p.name for p in (ROOT / CORE).iterdir() if (p / "__init__.py").exists())
    assert folders == sorted(ROOMS)
    assert sorted(p.name for p in (ROOT / CORE).glob("*.py")) == ["__init__.py", "mcp_server.py"]  # nothing left loose
    for name in ROOMS:
        init = ROOT / CORE / name / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init}: say what the room is for"
        names = face(name)
        assert names and all((ROOT / CORE / name / f"{module}.py").is_file() for module in names), (name, names)


def test_a_room_imports_only_the_rooms_below_it():
    """Absolute and relative imports, at any depth, and import_module literals, over every module of a room."""
    wrong = []
    for path in (ROOT / CORE).rglob("*.py"):
        own = room_of(import_name(path))
        if own is None:
            continue
        for line, name in imports_named(path):
            target = room_of(name)
            if name.split(".")[:3] == [ROOT_PACKAGE, CORE, "mcp_server"] or (
                target and ROOMS.index(target) > ROOMS.index(own)
            ):
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {name}")
    assert wrong == [], wrong


def test_outside_a_room_only_its_face_is_imported():
    """Every .py of the repository (scripts/ and bench/ too) but the tests, which may reach inside."""
    reaching_in = []
    for path in every_python_file():
        if path.relative_to(ROOT).parts[0] == "tests":
            continue
        own = room_of(import_name(path))
        for line, name in imports_named(path):
            target = room_of(name)
            pieces = name.split(".")
            if target and target != own and len(pieces) > 3 and pieces[3] not in face(target):
                reaching_in.append(f"{path.relative_to(ROOT)}:{line} imports {name}, not in {target}'s face")
    assert reaching_in == [], reaching_in


def test_the_room_scan_sees_what_the_import_system_sees():
    source = (
        "from ..upstreams import live\n"
        "def later():\n"
        "    importlib.import_module('mcpgw.gateway.endpoints.hot_lane')\n"
        "    from mcpgw.gateway import mcp_server as front\n"
    )
    names = {name for _, name in names_imported(ast.parse(source), "mcpgw.gateway.tools.catalog")}
    assert names == {
        "mcpgw.gateway.upstreams",
        "mcpgw.gateway.upstreams.live",
        "mcpgw.gateway.endpoints.hot_lane",
        "mcpgw.gateway",
        "mcpgw.gateway.mcp_server",
    }
    assert {room_of(name) for name in names} == {"upstreams", "endpoints", None}


def module_imports() -> dict[str, set[str]]:
    """module -> the project modules it imports, function-level and relative imports included."""
    modules = package_sources()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                ((_, base),) = imported_names(
                    ast.Module(body=[node], type_ignores=[]), module, path.name == "__init__.py"
                )
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
                names = [
                    name
                    for _, name in imported_names(
                        ast.Module(body=[ast.Expr(node)] if isinstance(node, ast.Call) else [node], type_ignores=[]),
                        module,
                        path.name == "__init__.py",
                    )
                ]
            else:
                continue
            for name in names:
                target = resolve(name)
                # a module's own package (__init__) is imported by the import system anyway: not an edge
                if target and target != module and not module.startswith(target + "."):
                    edges[module].add(target)
    return edges


def test_no_module_cycle_even_through_imports_inside_functions():
    edges = module_imports()
    assert (
        "mcpgw.lock.installer" in edges and "mcpgw.lock.build" in edges["mcpgw.lock.installer"]
    )  # lock/ is in the graph
    done: set[str] = set()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycles.append(" -> ".join(path[path.index(module) :] + [module]))
            return
        if module in done:
            return
        for target in sorted(edges[module]):
            visit(target, path + [module])
        done.add(module)

    for module in sorted(edges):
        visit(module, [])
    assert not cycles, cycles


# Modules stay small enough to read in one sitting; generated or data-only files are not in these packages.
MAX_MODULE_LINES = 400


def test_modules_stay_under_about_400_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for package in packages()
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these into modules of one concept each: {long}"


def test_scripts_and_bench_stay_under_about_400_lines():
    """The same rule for the tools beside the packages: every module under scripts/ and bench/."""
    sources = [
        path
        for folder in ("scripts", "bench")
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    ]
    assert len(sources) > 20, "scripts/ and bench/ moved? the scan found almost nothing"
    long = {
        str(path.relative_to(ROOT)): n
        for path in sources
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these into modules of one concept each: {long}"
