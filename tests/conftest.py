"""Shared fixtures: run `mcpgw serve` the way a user does, on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
MISBEHAVING = [sys.executable, str(FIXTURES / "misbehaving_server.py")]


SERVING = re.compile(r"mcpgw: serving MCP at \S+ .*\(status: (http://\S+)/status\)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningGateway:
    url: str  # the MCP endpoint
    base: str
    process: subprocess.Popen
    cassettes: Path
    log_path: Path
    token: str | None = None  # the gateway's bearer token, when it was started with one

    def status(self) -> dict:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        return httpx.get(self.base + "/status", timeout=5, headers=headers).json()

    def server(self, name: str) -> dict:
        return self.status()["servers"][name]

    def wait_state(self, name: str, states: tuple[str, ...], timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.server(name)
            if info["state"] in states:
                return info
            time.sleep(0.1)
        raise AssertionError(f"{name} never reached {states}: {self.server(name)}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_gateway(
    tmp_path: Path,
    config: str,
    *args: str,
    suffix: str = ".yaml",
    settle: float = 240,
    token: str | None = None,
    naming: str | None = "prefix",
) -> RunningGateway:
    """`mcpgw serve` with these flags; `token`: the value of its --auth-token-env variable, to read /status.
    `naming`: the tests call tools by their `<server>__<tool>` names, one server or several, so `--naming prefix`
    is given unless the flags name one (None: the gateway's default, bare in front of one server).
    On a port the system picks (`--port 0`, read back from its log): no free_port() race. With --workers
    (one port for several processes) the port is picked here, as before."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config_path = tmp_path / f"config{suffix}"
    config_path.write_text(config)
    port = free_port() if "--workers" in args else 0
    cassettes = tmp_path / "cassettes"
    log_path = tmp_path / "gateway.log"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "serve",
            "--config",
            str(config_path),
            "--port",
            str(port),
            "--cassettes-dir",
            str(cassettes),
            "--cassette",
            "test",
            *args,
            *(("--naming", naming) if naming and "--naming" not in args else ()),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        start_new_session=True,
    )
    gateway = RunningGateway("", "", process, cassettes, log_path, token)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"gateway exited: {gateway.log()}")
        if not gateway.base:
            said = SERVING.search(gateway.log()) if port == 0 else None
            if port or said:
                gateway.base = f"http://127.0.0.1:{port}" if port else said.group(1)
                gateway.url = gateway.base + "/mcp"
        try:
            status = gateway.status() if gateway.base else None
            if status and all(s["state"] not in ("starting",) for s in status["servers"].values()):
                return gateway
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop_gateway(gateway)
    raise AssertionError(f"gateway did not settle: {gateway.log()}")


def stop_gateway(gateway: RunningGateway) -> None:
    if gateway.process.poll() is None:
        gateway.process.send_signal(signal.SIGTERM)
        try:
            gateway.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(gateway.process.pid, signal.SIGKILL)
            gateway.process.wait(timeout=5)


@pytest.fixture
def anyio_backend() -> str:
    """`@pytest.mark.anyio` tests run on asyncio, the loop `mcpgw serve` runs on."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_inprocess_gateway_left_running() -> Iterator[None]:
    """A test that started in-process gateways by hand and failed before stopping them: stopped here."""
    yield
    if "tests.inprocess" in sys.modules:
        sys.modules["tests.inprocess"].stop_leftovers()


@pytest.fixture
def inprocess_factory(tmp_path: Path) -> Iterator:
    """As `gateway_factory`, the gateway in this process (tests/inprocess.py): for tests not about processes,
    signals, workers or the command's exit. The first gateway lives in tmp_path as `gateway_factory`'s does; a
    second one in tmp_path/gateway-N (one process opens a cassette once)."""
    from tests.inprocess import InProcessGateway, start_inprocess

    started: list[InProcessGateway] = []

    def factory(config: str, *args: str, **kwargs) -> InProcessGateway:
        where = tmp_path / f"gateway-{len(started)}" if started else tmp_path
        gateway = start_inprocess(where, config, *args, **kwargs)
        started.append(gateway)
        return gateway

    yield factory
    for gateway in started:
        gateway.stop()


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator:
    started: list[RunningGateway] = []

    def factory(config: str, *args: str, suffix: str = ".yaml", naming: str | None = "prefix") -> RunningGateway:
        gateway = start_gateway(tmp_path, config, *args, suffix=suffix, naming=naming)
        started.append(gateway)
        return gateway

    yield factory
    for gateway in started:
        stop_gateway(gateway)


def misbehaving_entry(name: str, *flags: str, extra: str = "") -> str:
    args = json.dumps([MISBEHAVING[1], *flags])
    return f"  {name}:\n    command: {json.dumps(MISBEHAVING[0])}\n    args: {args}\n{extra}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


# -- MCP-Bench servers built from the pinned snapshot (shared by the lock and runs tests) --------------

# CI has the shared folder beside the clone; a worktree elsewhere can point at it with MCPGW_TEST_SNAPSHOTS.
SNAPSHOTS = Path(os.environ.get("MCPGW_TEST_SNAPSHOTS") or ROOT.parent / "shared" / "mcp-bench").resolve()
# Built once per session: two servers with no registry package (node, python), Scientific Computing, and
# two whose registry package is not MCP-Bench's code (Huge Icons: node; Wikipedia: python from its uv.lock).
BUILT = ("math_mcp", "bibliomantic", "scientific_computing", "huge_icons", "wikipedia")


def install_servers(
    cache: Path, *argv: str, config: str = "servers.lock.yaml", package_caches: Path | None = None
) -> subprocess.CompletedProcess:
    """`mcpgw servers install` into `cache`; with `package_caches`, npm and uv start from empty caches of
    their own there too, as on a machine that never installed anything."""
    env = {**os.environ, "MCPGW_CACHE": str(cache)}
    if package_caches is not None:
        env.update(npm_config_cache=str(package_caches / "npm"), UV_CACHE_DIR=str(package_caches / "uv"))
    env.pop("MCPGW_SOURCES", None)
    return subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "servers", "install", "--config", config, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=1200,
    )


@pytest.fixture(scope="session")
def built_cache(tmp_path_factory) -> Path:
    """The `BUILT` servers built from the snapshot, once per session, from empty caches: ours, npm's and
    uv's (a build that could only use what an earlier one left in a warm cache fails here)."""
    if not (SNAPSHOTS / "Accenture+mcp-bench@09e52332b22428bf891be59047e01cb9adc063b4.tar.gz").exists():
        pytest.skip(f"no MCP-Bench snapshot at {SNAPSHOTS} (CI puts the shared folder beside the clone)")
    cache = tmp_path_factory.mktemp("mcpgw-cache")
    done = install_servers(
        cache,
        "--servers",
        *BUILT,
        "--sources",
        str(SNAPSHOTS),
        package_caches=tmp_path_factory.mktemp("package-caches"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return cache


# -- the fast tier: `pytest -m fast` -----------------------------------------------------------------------
# A test is `slow` when it starts `mcpgw` (or a real npx/uvx server) as a process, or sends signals: it has the
# `real` marker, or the code of the test, of its fixtures or of the test-suite functions they call (followed by
# name, to any depth; comments and docstrings aside) names one of PROCESS_WORDS. Every other test is `fast`.
# `@pytest.mark.slow` can be put on a test by hand (a long fuzz run, say). The rule needs no list to keep: a new
# test lands in its tier by what it does. The in-process gateway (tests/inprocess.py) is the fast tier's.
PROCESS_WORDS = re.compile(
    r"\b(start_gateway|gateway_factory|GatewayProcess|subprocess|Popen|create_subprocess_exec|"
    r"multiprocessing|StdioServerParameters|npx|uvx|install_servers|built_cache|"
    r"mcpgw\.cli\b(?!\s+import))|--workers\b|\bsignal\.(SIG|pthread_sigmask|raise_signal)"
)
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: dict[object, tuple[bool, list[object]]] = {}
    for item in items:
        if (
            item.get_closest_marker("slow") is None
            and item.get_closest_marker("real") is None
            and not _starts_processes(item, seen)
        ):
            item.add_marker(pytest.mark.fast)
        elif item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


def _starts_processes(item: pytest.Item, seen: dict[object, tuple[bool, list[object]]]) -> bool:
    import inspect

    function = getattr(item, "function", None)
    if function is None:
        return True  # not a Python test (none today): the slow side is the safe one
    todo: list[object] = [function]
    info = getattr(item, "_fixtureinfo", None)
    for name in info.names_closure if info is not None else ():
        todo += [definition.func for definition in info.name2fixturedefs.get(name, ())]
    done: set[int] = set()
    while todo:
        code = inspect.unwrap(todo.pop())  # type: ignore[arg-type]
        if id(code) in done:
            continue
        done.add(id(code))
        if code not in seen:
            seen[code] = _read(code)
        starts, names = seen[code]
        if starts:
            return True
        todo += names
    return False


def _read(code: object) -> tuple[bool, list[object]]:
    """Whether this test-suite function or class names a process word; else the suite's functions and classes it
    names (its module's, and what that module imported from tests/)."""
    import inspect

    try:
        where = Path(inspect.getsourcefile(code) or "").resolve()  # type: ignore[arg-type]
        text = inspect.getsource(code)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return False, []
    if TESTS not in where.parents or where.name == "inprocess.py":
        return False, []  # the product's own code, and the in-process gateway, start no `mcpgw` process
    if PROCESS_WORDS.search(_code_only(text)):
        return True, []
    module = inspect.getmodule(code)
    namespace = vars(module) if module is not None else {}
    names = [namespace[word] for word in set(re.findall(r"[A-Za-z_]\w*", text)) if word in namespace]
    return False, [value for value in names if inspect.isfunction(value) or inspect.isclass(value)]


def _code_only(text: str) -> str:
    """The source without its comments and docstrings (which may name a process word they do not use)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return text
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body[0] = ast.Pass()
    return ast.unparse(tree)
