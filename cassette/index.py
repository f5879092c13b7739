"""One server's recording as replay looks it up: request key -> recorded entries, in order.

Entries recorded since keys hold history carry `base` and `history`, and are
indexed by their stored key. Older entries (keyed by arguments alone, or, for
servers then flagged stateful, by every earlier call) are re-keyed the way
recording keys them today, by walking each recorded lane in order, so an old
cassette gets the same protection against answering from another state.
"""

from __future__ import annotations

from typing import Any

from mcpgw.cassette.codec import pack
from mcpgw.cassette.keys import base_key, with_history
from mcpgw.cassette.redaction import MASK
from mcpgw.cassette.state import Call, StateModel

_MASK_BYTES = MASK.encode()


def build_index(
    entries: list[dict[str, Any]], model: StateModel, *, legacy_stateful: bool
) -> dict[str, list[dict[str, Any]]]:
    index: dict[str, list[dict[str, Any]]] = {}
    histories: dict[str, str] = {}  # legacy entries: lane -> history so far
    for entry in entries:
        if "base" not in entry:
            rekeyed = _rekeyed(entry, model, legacy_stateful, histories)
            if rekeyed is None:
                continue
            entry = rekeyed
        index.setdefault(entry["key"], []).append(entry)
    return index


def _rekeyed(
    entry: dict[str, Any], model: StateModel, legacy_stateful: bool, histories: dict[str, str]
) -> dict[str, Any] | None:
    params = entry.get("params") or {}
    if not legacy_stateful:
        base = entry["key"]  # servers not then flagged stateful were keyed by what was asked alone
    elif _MASK_BYTES in pack(params):
        return None  # its arguments were redacted: the key it needs cannot be rebuilt
    else:
        base = base_key(model.server, entry["method"], params)
    lane = entry.get("lane", "")
    history = histories.get(lane, "") if model.tracked else ""
    call = Call(base, history, with_history(base, history), model.changes_state(entry["method"], params))
    if call.changes_state:
        histories[lane] = call.history_after()
    return {**entry, "key": call.key, "base": base, "history": history, "changes_state": call.changes_state}
