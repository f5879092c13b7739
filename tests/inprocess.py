"""`mcpgw serve` in this process: the same command line (`mcpgw.cli.main`), run in a thread of its own, serving
on a free 127.0.0.1 port through uvicorn, as a user's `mcpgw serve` does, without paying a new interpreter and
its imports (about 1.7 s of CPU) per gateway. The fast tier's gateway (README: tests; `pytest -m fast`).

Stopping it is what SIGTERM does to the subprocess: uvicorn's `should_exit`, then its orderly shutdown (servers
stopped, cassettes closed). uvicorn installs signal handlers only in the main thread, so none are taken here.
Tests about processes, signals, workers or the command's exit code keep `tests.conftest.start_gateway`.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tests.conftest import RunningGateway

# uvicorn.Server of each serving thread, so the test can stop the one it started (uvicorn keeps no registry).
_SERVERS: weakref.WeakKeyDictionary[threading.Thread, uvicorn.Server] = weakref.WeakKeyDictionary()
_original_startup = uvicorn.Server.startup


async def _startup_noted(self: uvicorn.Server, sockets: Any = None) -> None:
    _SERVERS[threading.current_thread()] = self  # keyed by the thread itself: a dead thread's id is reused
    await _original_startup(self, sockets=sockets)


uvicorn.Server.startup = _startup_noted  # type: ignore[method-assign]

# The Gateway each serving thread built, so a test reads its call log through the store it has open: LMDB
# (py-lmdb) refuses a second open of one environment in one process.
_GATEWAYS: weakref.WeakKeyDictionary[threading.Thread, Any] = weakref.WeakKeyDictionary()


def _note_gateway() -> None:
    from mcpgw.app import Gateway

    if getattr(Gateway.__init__, "noted", False):
        return
    original = Gateway.__init__

    def noted(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _GATEWAYS[threading.current_thread()] = self

    noted.noted = True  # type: ignore[attr-defined]
    Gateway.__init__ = noted  # type: ignore[method-assign]


@dataclass
class InProcessGateway(RunningGateway):
    """A `RunningGateway` whose `process` is a thread: `status()`, `server()`, `wait_state()` work as for a
    subprocess. What it says goes to this process's stderr (pytest's capture), so it has no `log()`."""

    thread: threading.Thread | None = None
    exit_code: list[int] = field(default_factory=list)

    def stop(self, timeout: float = 30) -> None:
        _STARTED[:] = [other for other in _STARTED if other is not self]
        if self.thread is None:
            return
        _GATEWAYS.pop(self.thread, None)
        server = _SERVERS.pop(self.thread, None)
        if server is not None:
            server.should_exit = True
        self.thread.join(timeout)
        if self.thread.is_alive():  # never left running behind a passing test
            raise AssertionError(f"the in-process gateway did not stop within {timeout} s")

    def log(self) -> str:
        raise AssertionError(
            "an in-process gateway writes no log file: read capsys/caplog, or use start_gateway "
            "for a test about what `mcpgw serve` prints"
        )

    def calls(self) -> list[dict[str, Any]]:
        """The call log's records so far, read through the gateway's own open cassette (a read transaction
        beside its writer thread, as another process's reader would be)."""
        built = _GATEWAYS.get(self.thread) if self.thread is not None else None
        if built is None or built.log_cassette is None:
            return []
        return [record for _, record in built.log_cassette.store.items("calls")]


def call_records(gateway: RunningGateway) -> list[dict[str, Any]]:
    """The call log of a gateway, in this process or not."""
    if isinstance(gateway, InProcessGateway):
        return gateway.calls()
    from mcpgw.recorder.calllog import iter_calls

    folder = gateway.cassettes / "test"
    return list(iter_calls(folder)) if (folder / "data.mdb").exists() else []


def start_inprocess(
    tmp_path: Path,
    config: str,
    *args: str,
    suffix: str = ".yaml",
    settle: float = 120,
    token: str | None = None,
    naming: str | None = "prefix",
) -> InProcessGateway:
    """As `tests.conftest.start_gateway`, in this process: same flags, same defaults (`--naming prefix`,
    `--cassette test`, cassettes under tmp_path), on a port the system picks. Stopped by `.stop()`, else after
    the test that started it; a gateway for a module or session: `with inprocess_gateway(...)`."""
    from mcpgw.cli import main

    _note_gateway()
    tmp_path.mkdir(parents=True, exist_ok=True)
    config_path = tmp_path / f"config{suffix}"
    config_path.write_text(config)
    cassettes = tmp_path / "cassettes"
    argv = [
        "serve",
        "--config",
        str(config_path),
        "--port",
        "0",
        "--cassettes-dir",
        str(cassettes),
        "--cassette",
        "test",
        *args,
        *(("--naming", naming) if naming and "--naming" not in args else ()),
    ]
    gateway = InProcessGateway("", "", None, cassettes, tmp_path / "gateway.log", token)  # type: ignore[arg-type]

    def serve() -> None:
        gateway.exit_code.append(main(argv))

    _STARTED.append(gateway)
    gateway.thread = threading.Thread(target=serve, name=f"mcpgw-serve-{tmp_path.name}", daemon=True)
    gateway.thread.start()
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        if not gateway.thread.is_alive():
            raise AssertionError(f"the in-process gateway exited with {gateway.exit_code}")
        server = _SERVERS.get(gateway.thread)
        if server is not None and server.started and not gateway.base:
            port = server.servers[0].sockets[0].getsockname()[1]
            gateway.base = f"http://127.0.0.1:{port}"
            gateway.url = gateway.base + "/mcp"
        with contextlib.suppress(httpx.HTTPError):
            status = gateway.status() if gateway.base else None
            if status and all(s["state"] != "starting" for s in status["servers"].values()):
                return gateway
        time.sleep(0.05)
    gateway.stop()
    raise AssertionError("the in-process gateway did not settle")


# Every gateway started and not stopped yet (but those a `with inprocess_gateway(...)` block owns), so one a
# failing test left running is stopped after it (`stop_leftovers`, from an autouse fixture of tests/conftest.py).
_STARTED: list[InProcessGateway] = []


def stop_leftovers() -> None:
    while _STARTED:
        _STARTED.pop().stop()


@contextlib.contextmanager
def inprocess_gateway(tmp_path: Path, config: str, *args: str, **kwargs: Any) -> Iterator[InProcessGateway]:
    gateway = start_inprocess(tmp_path, config, *args, **kwargs)
    _STARTED[:] = [other for other in _STARTED if other is not gateway]  # this block stops it, at its scope's end
    try:
        yield gateway
    finally:
        gateway.stop()
