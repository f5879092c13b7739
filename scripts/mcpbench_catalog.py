#!/usr/bin/env python3
"""Each server of a serving gateway: its state, the tools it lists and the tools it exposes (less the lock's
`hide_tools`), beside the count MCP-Bench's paper gives in Table 7, as the lock records it (the `# tools (N,
Table 7)` line of the entry); then the sums. What a fresh machine gives after `mcpgw servers install
--profile mcpbench`:

    MCPGW_SOURCES=../shared/mcp-bench mcpgw servers install --profile mcpbench
    mcpgw serve --mode live --profile mcpbench &
    python scripts/mcpbench_catalog.py http://127.0.0.1:8765

Table 7's number column did not survive the paper's text extraction for every row; where it is missing, the
lock's count is that of the tools the row lists. BioMCP's row says 14 where the paper's text says 35 (the
lock's comment says so). Exit status 0 when every ready server lists the count the lock records.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx

LOCK = Path(__file__).resolve().parent.parent / "servers.lock.yaml"
PAPER_TOTAL = 250  # "In total, these servers provide 250 tools" (MCP-Bench, section 3)


def recorded_counts(lock_text: str) -> dict[str, tuple[int, str]]:
    """Entry -> (count, what the comment says of it), from each entry's `# tools (...)` line."""
    counts, entry = {}, None
    for line in lock_text.splitlines():
        if m := re.match(r"^  ([a-z_0-9]+):$", line):
            entry = m.group(1)
        elif entry and (m := re.match(r"^\s+# tools \((\d+)(.*?)\):", line)):
            counts[entry] = (int(m.group(1)), m.group(2).lstrip(",; "))
    return counts


def main() -> int:
    base = (sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8765").rstrip("/")
    try:
        servers = httpx.get(base + "/status", timeout=10).json()["servers"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        print(f"mcpbench_catalog: no gateway status at {base}: {exc}", file=sys.stderr)
        return 2
    counts = recorded_counts(LOCK.read_text())
    print(f"{'server':22} {'state':12} {'listed':>6} {'exposed':>7} {'Table 7':>7}  note")
    ready = listed = exposed = table7_ready = table7_all = 0
    differ = []
    for sid, info in sorted(servers.items()):
        count, said = counts.get(sid, (None, ""))
        table7 = count if said.startswith("Table 7") else None
        note = "; ".join(x for x in (said if said not in ("", "Table 7") else "", (info.get("reason") or "")[:70]) if x)
        print(
            f"{sid:22} {info['state']:12} {info['tools']:>6} {info.get('exposed_tools', info['tools']):>7} "
            f"{table7 if table7 is not None else '-':>7}  {note}"
        )
        table7_all += table7 or 0
        if info["state"] == "ready":
            ready, listed = ready + 1, listed + info["tools"]
            exposed += info.get("exposed_tools", info["tools"])
            table7_ready += table7 or 0
            if count is not None and info["tools"] != count:
                differ.append(sid)
    print(
        f"{ready} of {len(servers)} ready: {listed} tools listed, {exposed} exposed; Table 7 gives {table7_ready} "
        f"for them, {table7_all} for all {len(servers)} (the paper's text: {PAPER_TOTAL} in total)"
    )
    if differ:
        print(f"listed counts other than the lock's: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
