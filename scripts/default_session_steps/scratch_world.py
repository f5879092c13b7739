"""Where the session works (the paths the lock entries allow) and the files it writes or builds there."""

from __future__ import annotations

import base64
import struct
import zlib

FS_ROOT = "/tmp/mcpgw-fs"  # filesystem: the allowed directory (args of its lock entry)
SESSION_DIR = f"{FS_ROOT}/default-session"
WORKSPACE = f"{SESSION_DIR}/workspace"
REPO = f"{SESSION_DIR}/repo"
RUN_ID = "default-session"

VITALS_CSV = "patient,sbp,dbp,heart_rate\nP-001,120,80,72\nP-002,142,91,88\nP-003,108,68,64\n"
WARD_NOTES = "# Ward round notes\n\n- P-001: stable, discharge planned\n- P-002: MAP above target, recheck in 4 h\n- P-003: stable\n"
REPO_README = "# dose-tools\n\nSmall helpers for bedside calculations.\n"
UNITS_PY = (
    '"""Unit helpers used at the bedside."""\n\n\n'
    "def lb_to_kg(pounds: float) -> float:\n"
    "    return round(pounds * 0.45359237, 2)\n\n\n"
    "def f_to_c(fahrenheit: float) -> float:\n"
    "    return round((fahrenheit - 32) * 5 / 9, 1)\n"
)


def tiny_png(width: int = 8, height: int = 8) -> bytes:
    """A small RGB gradient PNG, built byte by byte so the file is the same on every run."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 32, y * 32, 160)) for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def data_uri(mime: str, text: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(text.encode()).decode()}"
