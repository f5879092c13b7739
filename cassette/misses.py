"""What a replay miss says, for every kind of exchange: the one module that words them.

A miss (nothing recorded answers a request), a divergence (the lane left the
recording earlier, so it is refused) and a refusal (an untagged model client
that cannot be told which recording is its own) all say what differs and where:
- an MCP server's miss names the nearest recorded calls of the same target and
  how their arguments differ (`nearest`, `describe_miss`, `tool_miss`);
- a model miss names the nearest recorded request (same run first) and the
  first message, or the first other field, that is not the same (`describe_model_miss`);
- a divergence says at which call the lane left the recording (`diverged_at`,
  `dropped_lane_returned`, `catch_up_diverged`) and why a later call is refused (`refused`);
- the simulator's and the untagged client's refusals (`simulator_gave_none`, `untagged_refusal`).
It sits in recorder/ (imports nothing of ours) so that every layer that meets a
miss can call it: the lane table (cassette.state), the player and the cassette
upstream (replay), the model passthrough (llm). Only a miss pays for the wording.
"""

from __future__ import annotations

import json
from typing import Any

ARGUMENTS_SHOWN = 600  # characters of a nearest recording's arguments: whole, for all but the largest


def what(method: str, params: dict[str, Any]) -> str:
    """A request in a few words: its method and its target (tool, prompt or resource)."""
    target = params.get("name") or params.get("uri")
    return f"{method} {target!r}" if target else method


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)  # sorted: comparable with the recording
    return text if len(text) <= limit else text[: limit - 3] + "..."


def differences(wanted: Any, recorded: Any, path: str = "") -> list[str]:
    """Differences between two argument values, as short phrases naming where (`entities[0].name`):
    nested objects and lists are followed down, so a difference deep inside is shown, not cut off."""
    if isinstance(wanted, dict) and isinstance(recorded, dict):
        out = []
        for key in sorted(set(wanted) | set(recorded)):
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded:
                out.append(f"{where}={_short(wanted[key])} was not in the recording")
            elif key not in wanted:
                out.append(f"{where}={_short(recorded[key])} recorded but not asked")
            else:
                out += differences(wanted[key], recorded[key], where)
        return out
    if isinstance(wanted, list) and isinstance(recorded, list) and path:
        if len(wanted) != len(recorded):
            return [f"{path}: recorded {len(recorded)} item(s), asked {len(wanted)}"]
        return [d for i, (w, r) in enumerate(zip(wanted, recorded)) for d in differences(w, r, f"{path}[{i}]")]
    if wanted == recorded:
        return []
    if isinstance(wanted, str) and isinstance(recorded, str):
        shown_recorded, shown_wanted = _where_strings_differ(recorded, wanted)
    else:
        shown_recorded, shown_wanted = _short(recorded), _short(wanted)
    return [
        f"{path}: recorded {shown_recorded}, asked {shown_wanted}"
        if path
        else f"{shown_recorded} recorded, {shown_wanted} asked"
    ]


def _where_strings_differ(recorded: str, wanted: str, before: int = 20, limit: int = 60) -> tuple[str, str]:
    """Two long strings cut at the same 60 characters read alike when they differ further on: show each
    from a little before the first character where they part (the position said), not from their start."""
    same = next((i for i, (a, b) in enumerate(zip(recorded, wanted)) if a != b), min(len(recorded), len(wanted)))
    if max(len(json.dumps(recorded)), len(json.dumps(wanted))) <= limit or same < before:
        return _short(recorded, limit), _short(wanted, limit)
    start = same - before
    return tuple(
        f"...{_short(text[start:], limit)} (from character {start})"  # type: ignore[return-value]
        for text in (recorded, wanted)
    )


def nearest(method: str, params: dict[str, Any], entries: list[dict[str, Any]], limit: int = 3) -> list[dict[str, Any]]:
    """Recorded requests of the same method (and tool/prompt/uri target), fewest differences first."""
    target_key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    target = params.get(target_key) if target_key else None
    seen, scored = set(), []
    for entry in entries:
        if entry.get("method") != method:
            continue
        recorded = entry.get("params") or {}
        if target_key and recorded.get(target_key) != target:
            continue
        asked_args = params.get("arguments", {k: v for k, v in params.items() if k != "_meta"})
        recorded_args = recorded.get("arguments", {k: v for k, v in recorded.items() if k != "_meta"})
        signature = json.dumps(recorded_args, sort_keys=True, default=str)
        if signature in seen:
            continue
        seen.add(signature)
        diff = differences(asked_args, recorded_args)
        scored.append((len(diff), signature, {"arguments": recorded_args, "differences": diff}))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in scored[:limit]]


def describe_miss(server: str, method: str, params: dict[str, Any], near: list[dict[str, Any]], stateful: bool) -> str:
    what = params.get("name") or params.get("uri") or method
    text = f"replay miss: no recording of {method} {what!r} on server {server!r} with these arguments"
    if stateful:
        text += (
            " at this point of the run (calls to this server are keyed on the run's earlier state-changing "
            "calls; none recorded after the same ones matches)"
        )
    if not near:
        return text + "; nothing similar was recorded"
    # The recorded arguments whole (not cut at 60 characters): a value the differences do not name is readable too.
    lines = [
        f"{_short(n['arguments'], ARGUMENTS_SHOWN)} ({'; '.join(n['differences']) or 'same arguments, other history'})"
        for n in near
    ]
    return text + "; nearest recorded: " + " | ".join(lines)


def tool_miss(
    server: str,
    method: str,
    params: dict[str, Any],
    entries: list[dict[str, Any]],
    stateful: bool,
    changes_state: bool = False,
    simulate_only: bool = False,
) -> str:
    """An MCP server's replay miss (describe_miss over the nearest of `entries`), and what it means for the lane."""
    text = describe_miss(server, method, params, nearest(method, params, entries), stateful)
    if simulate_only:
        text += "; only tools/call answers of tools in the recorded catalog are simulated"
    if changes_state:
        text += (
            "; this call may change the server's state, so later calls to this server in this run will be refused too"
        )
    return text


def simulator_gave_none(server: str, params: dict[str, Any], why: Any) -> str:
    return (
        f"replay miss: no recording of tools/call {params.get('name')!r} on server {server!r} "
        f"with these arguments, and the simulator gave no answer: {why}"
    )


# -- divergence: where a lane left the recording, and what is refused after it --------------------------------


def diverged_at(calls: int, server: str, method: str, params: dict[str, Any] | None) -> str:
    """Where a lane left the recording: a state-changing call nothing recorded answers."""
    return f"call {calls} to server {server!r} ({what(method, params or {})}: not recorded at this point)"


def dropped_lane_returned(name: str, max_lanes: int, history: bool) -> str:
    """A lane forgotten for room (--max-lanes) and used again: `history`, the lane's history was dropped (the
    state group's view, cassette.state), else its place in the recording (the player's)."""
    if history:
        return (
            f"run {name!r} came back after {max_lanes} other runs were used since its last call (--max-lanes): "
            "its history was dropped for room, so its calls are no longer matched to the recording"
        )
    return (
        f"run {name!r} came back after {max_lanes} other runs were used since its last "
        "call (--max-lanes): its place in the recording was dropped for room"
    )


def refused(diverged: str | None, server: str, method: str, params: dict[str, Any], calls: int) -> str:
    return (
        f"replay refused: this run diverged from the recording at {diverged}; on server {server!r} "
        f"later answers from the recording would describe another state, so {what(method, params)} "
        f"(call {calls} to this server in this run) is not answered"
    )


def catch_up_diverged(number: int, what_call: str) -> str:
    return f"hybrid catch-up, replayed call {number} ({what_call})"


def catch_up_failed(server: str, sent: int, number: int, what_call: str, problem: str) -> str:
    return (
        f"hybrid catch-up failed on server {server!r}: to go live, a fresh instance was sent this run's "
        f"{sent} recorded state-changing call(s); call {number} ({what_call}) {problem}. "
        "The live server cannot be brought to the recorded state, so this call is not answered"
    )


# -- the model's misses ---------------------------------------------------------------------------------------
def _model_short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return _model_short(message)
    parts = [str(message.get("role"))]
    if message.get("content") not in (None, ""):
        parts.append(_model_short(message["content"]))
    if message.get("tool_calls"):
        calls = [
            f"{(c.get('function') or {}).get('name')}({_model_short((c.get('function') or {}).get('arguments'), 40)})"
            for c in message["tool_calls"]
            if isinstance(c, dict)
        ]
        parts.append("tool calls " + ", ".join(calls))
    return " ".join(parts)


def _where_texts_part(recorded: str, asked: str, around: int = 60) -> str:
    """The first differing character's offset and both texts around it: long prompts
    (40-85k characters) agree for thousands of characters before they differ."""
    offset = next((i for i, (a, b) in enumerate(zip(recorded, asked)) if a != b), min(len(recorded), len(asked)))
    start = max(0, offset - around)

    def excerpt(text: str) -> str:
        part = text[start : offset + around]
        return ("..." if start else "") + part + ("..." if offset + around < len(text) else "")

    return (
        f"first difference at character {offset} (of {len(recorded)} recorded, {len(asked)} asked): "
        f"recorded {excerpt(recorded)!r}, asked {excerpt(asked)!r}"
    )


def _message_difference(recorded: Any, asked: Any) -> str:
    if isinstance(recorded, dict) and isinstance(asked, dict) and recorded.get("role") == asked.get("role"):
        mine, theirs = asked.get("content"), recorded.get("content")
        if isinstance(mine, str) and isinstance(theirs, str) and mine != theirs:
            return f"{asked.get('role')} content, " + _where_texts_part(theirs, mine)
    return f"recorded {_message_text(recorded)!r}, asked {_message_text(asked)!r}"


def first_difference(asked: dict[str, Any], recorded: dict[str, Any]) -> tuple[int, str]:
    """(messages in common, a phrase saying what differs first)."""
    asked_msgs: list[Any] = given if isinstance(given := asked.get("messages"), list) else []
    recorded_msgs: list[Any] = kept if isinstance(kept := recorded.get("messages"), list) else []
    common = 0
    for mine, theirs in zip(asked_msgs, recorded_msgs):
        if mine != theirs:
            break
        common += 1
    if common < min(len(asked_msgs), len(recorded_msgs)):
        return common, f"message {common + 1} differs: {_message_difference(recorded_msgs[common], asked_msgs[common])}"
    if len(asked_msgs) != len(recorded_msgs):
        return common, f"{len(asked_msgs)} messages asked, {len(recorded_msgs)} recorded (the first {common} agree)"
    for key in sorted(set(asked) | set(recorded)):
        if key == "messages" or asked.get(key) == recorded.get(key):
            continue
        if key not in recorded:
            return common, f"{key}={_model_short(asked[key], 40)} was not in the recording"
        if key not in asked:
            return common, f"{key}={_model_short(recorded[key], 40)} recorded but not asked"
        return common, f"{key}: recorded {_model_short(recorded[key], 40)}, asked {_model_short(asked[key], 40)}"
    return common, "same request, asked more often than recorded"


def describe_model_miss(path: str, body: dict[str, Any], lane: str, entries: list[dict[str, Any]]) -> str:
    text = f"model replay miss in run {lane!r}: no recorded answer to this {path} request"
    if not entries:
        return text + "; the cassette holds no model exchanges (was it recorded with --llm-base-url?)"
    best = None
    for position, entry in enumerate(entries):
        if entry.get("method") != path:
            continue
        common, phrase = first_difference(body, entry.get("params") or {})
        recorded_msgs = (entry.get("params") or {}).get("messages") or []
        length_gap = abs(len(body.get("messages") or []) - len(recorded_msgs))
        score = (entry.get("lane") == lane, common, -length_gap, -position)
        if best is None or score > best[0]:
            best = (score, entry, phrase)
    if best is None:
        return text + f"; no {path} request was recorded"
    _, entry, phrase = best
    where = "in this run" if entry.get("lane") == lane else f"in run {entry.get('lane')!r}"
    return f"{text}; nearest recorded {where}: {phrase}"


def untagged_refusal(conversations: int, runs: set[str]) -> str:
    """An untagged model client refused (llm.untagged_refusal): which evaluation's answers are its own cannot be told."""
    shown = ", ".join(sorted(runs)[:5]) + (" ..." if len(runs) > 5 else "")
    return (
        f"this untagged model request begins {conversations} recorded conversations answered differently, and "
        f"the recording holds the tool calls of {len(runs)} tagged runs ({shown}): which evaluation's "
        "answers are yours cannot be told, so none is given. Tag the model client's run in its base URL, as "
        "`mcpgw connect --run <id>` prints: base_url http://HOST:PORT/runs/<id>/v1 (OpenAI), azure_endpoint "
        "http://HOST:PORT/runs/<id> (Azure, e.g. MCP-Bench's AZURE_OPENAI_ENDPOINT), when recording and when "
        "replaying"
    )
