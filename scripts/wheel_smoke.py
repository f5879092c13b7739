#!/usr/bin/env python3
"""Smoke test of an installed wheel (run by .ci/run with the python of a fresh venv, `-I`).

It proves what an editable install cannot: every module of the distribution imports from
site-packages, the default cassette travels inside the wheel, and a bare `mcpgw serve`
started in an empty folder replays it (a tool call through the SDK client over HTTP gives
the recorded answer) while the call log lands in that folder's ./cassettes/default/runs/.
Exit 0 when all holds; otherwise one line saying what failed.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import anyio
import httpx
import mcp_types as types
from mcp import Client

SITE = Path(sysconfig.get_paths()["purelib"]).resolve()


def fail(message: str) -> None:
    print(f"wheel smoke: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def import_everything() -> int:
    """Import every module the distribution installed, from site-packages."""
    modules = sorted(
        ".".join(f.with_suffix("").parts).removesuffix(".__init__")
        for f in (Path(str(p)) for p in importlib.metadata.files("mcpgw") or [])
        if f.suffix == ".py" and f.stem != "__main__" and not f.parts[0].endswith(".dist-info")
    )  # __main__ modules run a command when imported
    for name in ("mcpgw.lock", "mcpgw.evaluator.judges", "mcpgw.evaluator.report", "mcpgw.cassette.embedded"):
        if name not in modules:
            fail(f"{name} is not in the wheel")
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            fail(f"{name} does not import from the installed wheel: {exc}")
        if not Path(module.__file__).resolve().is_relative_to(SITE):
            fail(f"{name} imported from {module.__file__}, not from the installed wheel")
    return len(modules)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recorded_call(shipped: Path) -> dict:
    """The first recorded tools/call of a stateless server: it replays the same in any run."""
    from mcpgw.cassette.cassette import Cassette

    cassette = Cassette(shipped, create=False, readonly=True)
    try:
        recorded = cassette.load()
    finally:
        cassette.close()
    for server, spec in sorted(recorded.info["servers"].items()):
        if "stateful" in (spec.get("flags") or []):
            continue
        for entry in recorded.by_server.get(server, []):
            if entry["method"] == "tools/call" and "result" in entry:
                return entry
    fail("the shipped cassette holds no tools/call of a stateless server")
    raise AssertionError


def serve(mcpgw: Path, home: str, env: dict[str, str], *args: str) -> tuple[subprocess.Popen, str, dict, Path]:
    """`mcpgw serve ARGS` started in `home`, waited for until every server's first start has settled."""
    port = free_port()
    log_path = Path(home) / f"gateway-{port}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [str(mcpgw), "serve", "--port", str(port), *args],
            cwd=home,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            fail(f"mcpgw serve {' '.join(args)} exited ({process.returncode}): {log_path.read_text()[-2000:]}")
        try:
            status = httpx.get(base + "/status", timeout=2).json()
            if status["servers"] and all(s["state"] != "starting" for s in status["servers"].values()):
                return process, base, status, log_path
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop(process)
            fail(f"mcpgw serve {' '.join(args)} did not settle in 120 s: {log_path.read_text()[-2000:]}")
        time.sleep(0.1)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            fail("mcpgw serve did not stop within 15 s of SIGTERM")


def live_from_the_shipped_lock(mcpgw: Path) -> None:
    """The banner's own advice works from an empty folder, with the lock installed with the wheel:
    `mcpgw servers install --profile local`, then `mcpgw serve --mode live --profile local`, every server of
    the profile ready (the packages come from the registries, or the caches the CI's fetch left warm)."""
    from mcpgw.lock.config import SHIPPED_LOCK, default_lock, load_config

    with tempfile.TemporaryDirectory(prefix="mcpgw-wheel-lock-") as home:
        cwd = os.getcwd()
        os.chdir(home)
        try:
            found = default_lock()
        finally:
            os.chdir(cwd)
        if found != SHIPPED_LOCK:
            fail(f"the lock is not inside the wheel (found: {found})")
        local = set(load_config(SHIPPED_LOCK).profiles["local"])
        env = {**os.environ, "PATH": f"{mcpgw.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        env.pop("PYTHONPATH", None)
        install = subprocess.run(
            [str(mcpgw), "servers", "install", "--profile", "local"],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        if install.returncode != 0:
            fail(f"servers install --profile local from the shipped lock: {(install.stdout + install.stderr)[-2000:]}")
        process, _, status, log_path = serve(mcpgw, home, env, "--mode", "live", "--profile", "local")
        stop(process)
        states = {sid: info.get("state") for sid, info in status["servers"].items()}
        if set(states) != local or set(states.values()) != {"ready"}:
            fail(f"live from the shipped lock: {states}: {log_path.read_text()[-2000:]}")


def main() -> None:
    count = import_everything()
    from mcpgw.cassette.embedded import PACKAGED, shipped_default

    shipped = shipped_default()
    if shipped != PACKAGED:
        fail(f"the default cassette is not inside the wheel (found: {shipped})")
    before = hashlib.sha256((shipped / "data.mdb").read_bytes()).hexdigest()
    entry = recorded_call(shipped)
    mcpgw = Path(sys.executable).parent / "mcpgw"

    with tempfile.TemporaryDirectory(prefix="mcpgw-wheel-smoke-") as home:
        # Only the venv on PATH: a replay needs no npx, uvx or node.
        env = {**os.environ, "PATH": str(mcpgw.parent)}
        env.pop("PYTHONPATH", None)
        process, base, status, _ = serve(mcpgw, home, env)
        try:
            if status["mode"] != "replay" or any(s["pid"] is not None for s in status["servers"].values()):
                fail(f"a bare serve should replay with no server process: {status}")

            name = f"{entry['server']}__{entry['params']['name']}"

            async def call() -> types.CallToolResult:
                with anyio.fail_after(30):
                    async with Client(f"{base}/mcp?run=wheel-smoke") as client:
                        return await client.call_tool(name, entry["params"].get("arguments") or {})

            got = anyio.run(call)
            expected = types.CallToolResult.model_validate(entry["result"])
            if got.content != expected.content or bool(got.is_error) != bool(expected.is_error):
                fail(f"{name} answered {got.content!r}, recorded {expected.content!r}")
        finally:
            stop(process)
        logs = [p.parent.name for p in (Path(home) / "cassettes" / "default" / "runs").glob("*-replay/data.mdb")]
        if len(logs) != 1:
            fail(f"expected one replay log in {home}/cassettes/default/runs, found {logs}")
    if (shipped / "lock.mdb").exists() or hashlib.sha256((shipped / "data.mdb").read_bytes()).hexdigest() != before:
        fail(f"the replay wrote into the installed cassette {shipped}")
    live_from_the_shipped_lock(mcpgw)
    print(
        f"wheel smoke: ok ({count} modules import from {SITE}; `mcpgw serve` in an empty folder replayed {name}; "
        "`servers install` and `serve --mode live --profile local` found the lock inside the wheel and served its servers)"
    )


if __name__ == "__main__":
    main()
