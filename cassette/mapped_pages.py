"""Give back the pages of a cassette's memory-mapped file that a long read has gone through.

LMDB reads through a shared read-only mapping of data.mdb: every page a scan touches stays in the process's
resident set, so reading a cassette of 2 GB from end to end (`cassette show`, `calls export`, an audit, a replay
loading it) made the process 2 GB "big" although it holds none of it. `release` drops the mapping's resident
pages (madvise MADV_DONTNEED): for a shared file mapping that only unmaps them; the data stays in the page
cache and a later read maps it again, unchanged (nothing is lost, even in a transaction still open: LMDB's
pages are the file's). Linux only; anywhere else, or if anything fails, it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from pathlib import Path

MADV_DONTNEED = 4  # Linux
_libc: ctypes.CDLL | None = None


def _madvise() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        except (OSError, AttributeError):
            return None
    return _libc


def mappings_of(data_file: Path) -> list[tuple[int, int]]:
    """(start, end) of this process's mappings of `data_file` (matched by device and inode, from /proc)."""
    stat = os.stat(data_file)
    found = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or fields[4] != str(stat.st_ino):
                continue
            major, _, minor = fields[3].partition(":")
            if os.makedev(int(major, 16), int(minor, 16)) != stat.st_dev:
                continue
            start, _, end = fields[0].partition("-")
            found.append((int(start, 16), int(end, 16)))
    return found


def release(data_file: Path) -> None:
    """Drop this process's resident pages of `data_file`'s mappings (see the module's note)."""
    libc = _madvise()
    if libc is None:
        return
    try:
        for start, end in mappings_of(data_file):
            libc.madvise(start, end - start, MADV_DONTNEED)
    except (OSError, ValueError):
        pass  # no /proc, an odd line: the pages stay mapped, as without this
