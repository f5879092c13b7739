"""A cassette's files on disk, read without LMDB: its errors, whether another process has it open, and
whether its data file is as long as its own header says (before LMDB maps it: a short file is SIGBUS)."""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path


class CassetteFormatError(Exception):
    """The directory is not a cassette this version can read."""


class CassetteDamaged(CassetteFormatError):
    """The cassette's file is truncated or its pages are scribbled over."""


def in_use(path: Path) -> bool:
    """Whether another process has the cassette at `path` open: LMDB holds a shared lock on the first byte of
    `lock.mdb` while an environment is open on it (a read-only open without a lock file takes none, and writes
    nothing). Tried here as an exclusive lock, let go at once."""
    try:
        fd = os.open(Path(path) / "lock.mdb", os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
    except OSError:
        return True
    finally:
        os.close(fd)  # lets go of the trial lock too
    return False


# LMDB's file starts with two meta pages (page header, then MDB_meta); the newer one
# (higher txnid) says how many pages the database uses. Offsets are for 64-bit builds.
_META_MAGIC = 0xBEEFC0DE
_PAGE_HEADER = 16
_META_PSIZE = _PAGE_HEADER + 24  # mm_dbs[FREE_DBI].md_pad holds the page size
_META_LAST_PAGE = _PAGE_HEADER + 120  # mm_last_pg, then mm_txnid


def check_data_file(data: Path) -> None:
    """Refuse a data.mdb shorter than its own meta pages say it is, before LMDB maps it:
    reading a mapped page past the end of the file is SIGBUS, not an exception."""
    if not data.exists():
        return  # a new cassette: LMDB creates the file
    try:
        with open(data, "rb") as f:
            head = f.read(_META_LAST_PAGE + 16)
            if not head:
                return  # a new environment: LMDB writes its meta pages
            if len(head) < _META_LAST_PAGE + 16 or struct.unpack_from("<I", head, _PAGE_HEADER)[0] != _META_MAGIC:
                raise CassetteDamaged(f"{data}: damaged, not an LMDB file (bad header)")
            psize = struct.unpack_from("<I", head, _META_PSIZE)[0]
            if psize < 512 or psize > 1 << 16 or psize & (psize - 1):
                raise CassetteDamaged(f"{data}: damaged, bad page size {psize} in its header")
            f.seek(psize)
            second = f.read(_META_LAST_PAGE + 16)
            # The size is taken after the meta pages are read: a writer commits its pages before the
            # meta page naming them, so the file is at least as long as any meta read before (the
            # other order, while a gateway writes, reads a newer meta against an older size).
            size = os.fstat(f.fileno()).st_size
            if size < 2 * psize:
                raise CassetteDamaged(f"{data}: damaged, truncated to {size} bytes (less than its two header pages)")
    except OSError as exc:
        raise CassetteFormatError(f"{data}: cannot read it ({exc.strerror or exc})") from None
    metas = [
        struct.unpack_from("<QQ", page, _META_LAST_PAGE)
        for page in (head, second)
        if len(page) >= _META_LAST_PAGE + 16 and struct.unpack_from("<I", page, _PAGE_HEADER)[0] == _META_MAGIC
    ]
    last_page, _ = max(metas, key=lambda m: m[1])
    needed = (last_page + 1) * psize
    if size < needed:
        raise CassetteDamaged(f"{data}: damaged, truncated to {size} bytes of the {needed} its header records")
