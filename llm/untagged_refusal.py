"""An untagged model client replaying a recording of several tagged evaluations: refused where it could be wrong.

An untagged model client (no `/runs/<id>` in its base URL, no header: MCP-Bench's `AzureOpenAI` before it had one)
is bound to the first recorded conversation holding its first request (cassette.lanes). When the recording holds
two evaluations of the same tasks whose tool calls are tagged (`mcpgw connect mcpbench --run A|B`) but whose
model exchanges are not, both conversations begin with the same prompt, and evaluation B replayed alone was bound
to A's conversation: A's answers drove B's tagged tool calls, the runner finished with 0 misses, and B's result
file was A's. Nothing in an untagged exchange says which evaluation it belongs to, so where it matters the client
is refused, with how to tag: when the recording holds the tool calls of two or more tagged runs, and the recorded
conversations holding the client's first request were answered differently (when all answer alike, any of them
is the right one for that request, and a later request binds by its own content).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcpgw.cassette.misses import untagged_refusal

# An untagged caller's lane: `<default run>/<session-..|client-..|sse-..>` (gateway.routing.router_core.Caller.lane).
_UNTAGGED_LANE = re.compile(r"/(session|client|sse)-[^/]*$")


def tagged_runs(tool_entries: list[dict[str, Any]]) -> set[str]:
    """The runs a recording's tool exchanges were tagged with."""
    return {
        lane for entry in tool_entries if (lane := str(entry.get("lane") or "")) and not _UNTAGGED_LANE.search(lane)
    }


class Strangers:
    def __init__(self, runs: set[str], by_key: dict[str, list[dict[str, Any]]]) -> None:
        self.runs = runs
        self.by_key = by_key  # key -> recorded model exchanges (cassette.lanes.LaneRule.by_key)

    def refusal(self, key: str) -> str | None:
        """Why an untagged client's first request `key` cannot be bound to one recorded conversation, if so."""
        if len(self.runs) < 2:
            return None
        answers: dict[str, str] = {}
        for entry in self.by_key.get(key) or ():
            answers.setdefault(str(entry.get("lane") or ""), json.dumps(entry.get("result"), sort_keys=True))
        if len(answers) < 2 or len(set(answers.values())) < 2:
            return None
        return untagged_refusal(len(answers), self.runs)
