#!/usr/bin/env python3
"""Each server of a serving gateway: its state and the tools it serves, beside the count the lock records
for it (the `# tools (N...)` line of its entry; "Table 7" when that count is MCP-Bench's Table 7's), and
the sums. What a fresh machine gives after `mcpgw servers install --profile mcpbench`:

    MCPGW_SOURCES=../shared/mcp-bench mcpgw servers install --profile mcpbench
    mcpgw serve --mode live --profile mcpbench &
    python scripts/mcpbench_catalog.py http://127.0.0.1:8765
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx

LOCK = Path(__file__).resolve().parent.parent / "servers.lock.yaml"


def recorded_counts(lock_text: str) -> dict[str, tuple[int, bool]]:
    counts, entry = {}, None
    for line in lock_text.splitlines():
        if (m := re.match(r"^  ([a-z_0-9]+):$", line)):
            entry = m.group(1)
        elif entry and (m := re.match(r"^\s+# tools \((\d+)(.*?)\)", line)):
            counts[entry] = (int(m.group(1)), "Table 7" in m.group(2))
    return counts


def main() -> int:
    base = (sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8765").rstrip("/")
    try:
        servers = httpx.get(base + "/status", timeout=10).json()["servers"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        print(f"mcpbench_catalog: no gateway status at {base}: {exc}", file=sys.stderr)
        return 2
    counts = recorded_counts(LOCK.read_text())
    print(f"{'server':22} {'state':12} {'tools':>5} {'lock':>5}  source of the lock's count")
    ready = served = expected = 0
    for sid, info in sorted(servers.items()):
        count, table7 = counts.get(sid, (None, False))
        print(f"{sid:22} {info['state']:12} {info['tools']:>5} {count if count is not None else '-':>5}  "
              f"{'Table 7' if table7 else 'the server as pinned' if count is not None else '-'}"
              + (f"  ({info['reason'][:70]})" if info.get("reason") else ""))
        if info["state"] == "ready":
            ready, served, expected = ready + 1, served + info["tools"], expected + (count or 0)
    print(f"{ready} of {len(servers)} ready, serving {served} tools; the lock records {expected} for them")
    return 0 if served == expected else 1


if __name__ == "__main__":
    sys.exit(main())
