"""One writer per cassette: an OS advisory lock on a file in the cassette's folder.

Whatever writes a cassette (record, hybrid, an overlay, a call log) holds `writer.lock` in its folder
exclusively (flock) from the moment it opens the cassette until it closes it; a second writer is refused
at start, naming the process that holds it (its pid, command and start time, which the holder writes
into the file). Two writers would otherwise both append: a run recorded through two gateways becomes
one lane that misses and diverges on replay, and two replays adding to one overlay leave a mix of both.

The kernel lets go of the lock when its holder exits, however it exits (`kill -9` too), so a dead
gateway never leaves a cassette locked; the file stays behind, unlocked, and the next writer rewrites
it. Readers (replays of a recording) take no lock, so any number of them run at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcpgw.gateway.errors.tree import CassetteError

LOCK_FILE = "writer.lock"


class CassetteBusy(CassetteError):
    """Another process writes this cassette."""


class WriterLock:
    """This process's hold on a cassette's writer lock (`fd` None: held by the parent process, shared with it)."""

    def __init__(self, folder: Path, fd: int | None, made_folder: bool) -> None:
        self.folder = folder
        self.fd = fd
        self.made_folder = made_folder  # the folder did not exist before this lock made it

    def release(self, *, remove: bool = False) -> None:
        """Let go; with `remove`, delete the lock file first, while still holding it (a start that made the
        cassette and is refused takes it away again: a process that opened the file meanwhile sees it replaced,
        `hold_writer`'s check)."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        if remove:
            try:
                os.unlink(self.folder / LOCK_FILE)
            except OSError:
                pass
        os.close(fd)  # closing the only descriptor of the open file lets go of its flock


def hold_writer(folder: Path, *, create: bool, parent_may_hold: bool = False) -> WriterLock:
    """Take the writer lock of the cassette in `folder` (made first when `create`), or refuse with CassetteBusy
    naming its holder. `parent_may_hold`: a `--workers` worker writes the call log its parent holds the lock of."""
    folder = Path(folder)
    made_folder = False
    if create and not folder.exists():
        try:
            folder.mkdir(parents=True)
            made_folder = True
        except FileExistsError:
            pass  # another process made it meanwhile: the lock decides which of us writes
        except OSError as exc:
            raise CassetteError(f"cannot make cassette folder {folder}: {exc.strerror or exc}") from None
    path = folder / LOCK_FILE
    for _ in range(5):  # again only when the file was replaced under us (a refused start removing the cassette it made)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise CassetteError(f"cannot lock cassette {folder} for writing: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            who = holder(folder)
            if parent_may_hold and who is not None and who.get("pid") == os.getppid():
                return WriterLock(folder, None, False)
            raise CassetteBusy(busy_message(folder, who)) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_this_process()).encode(), 0)
        return WriterLock(folder, fd, made_folder)
    raise CassetteBusy(
        f"cassette {folder}: its writer lock file keeps being replaced; another process is "
        "making or removing this cassette: try again"
    )


def holder(folder: Path) -> dict[str, Any] | None:
    """Who holds (or last held) the writer lock, as it wrote itself into the file; None when unknown.
    A holder writes just after taking the lock: an empty file is read again, briefly (bounded)."""
    for _ in range(20):
        try:
            text = (Path(folder) / LOCK_FILE).read_text()
        except OSError:
            return None
        try:
            found = json.loads(text)
            return found if isinstance(found, dict) else None
        except ValueError:
            time.sleep(0.01)
    return None


def busy_message(folder: Path, who: dict[str, Any] | None) -> str:
    said = "another process"
    if who:
        said = f"pid {who.get('pid')} ({who.get('command')}, since {who.get('since')})"
    return (
        f"cassette {folder} is being written by {said}: one writer per cassette. Stop that process first, or "
        "write another cassette (replaying it, which only reads it, needs no lock)"
    )


def _this_process() -> dict[str, Any]:
    command = shlex.join(getattr(sys, "orig_argv", sys.argv))
    return {
        "pid": os.getpid(),
        "command": command if len(command) <= 300 else command[:297] + "...",
        "since": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
