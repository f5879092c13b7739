"""What a run leaves in its call-log cassette (`runs` database, kind "agent-run"), so
`mcpgw eval --run <cassette>` (evaluator/cli.py reads it) finds the task files, the answers
and the servers' titles."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

KIND = "agent-run"


def write_manifest(cassette_dir: str | Path, manifest: dict[str, Any]) -> None:
    from mcpgw.cassette.cassette import Cassette

    cassette = Cassette(Path(cassette_dir), create=False)
    try:
        cassette.record_run({"kind": KIND, "started": manifest.get("started", time.time()), **manifest})
    finally:
        cassette.close()
