"""What the recording got: the table of outcomes per tool, and the check that get-env recorded no secrets."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from default_session import Step

from .settings import SECRET_NAMES, Failure


def outcome(observation: dict[str, Any]) -> str:
    if "error" in observation:
        return "protocol_error"
    if "transport_error" in observation:
        return "transport_error"
    result = observation["result"]
    return "tool_error" if isinstance(result, dict) and result.get("isError") else "ok"


def preview(observation: dict[str, Any], width: int = 70) -> str:
    if "error" in observation:
        text = f"{observation['error']['code']}: {observation['error']['message']}"
    elif "transport_error" in observation:
        text = observation["transport_error"]
    else:
        result = observation["result"]
        content = result.get("content") if isinstance(result, dict) else None
        first = content[0] if content else {}
        text = first.get("text") or first.get("type") or json.dumps(result)[:width]
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_table(steps: list[Step], observations: list[dict[str, Any]], skipped: list[tuple[str, str]]) -> Counter:
    rows: dict[str, list[Any]] = {}
    for step, obs in zip(steps, observations):
        if step.kind != "tool":
            continue
        row = rows.setdefault(step.target, [0, Counter(), preview(obs), step.generated])
        row[0] += 1
        row[1][outcome(obs)] += 1
    width = max(len(name) for name in rows) + 2
    print(f"\n{'tool':<{width}} {'calls':>5}  {'outcome':<22} first answer")
    totals: Counter = Counter()
    for name, (calls, outcomes, first, generated) in rows.items():
        label = ", ".join(f"{k}" if n == calls else f"{k}×{n}" for k, n in outcomes.items())
        print(f"{name:<{width}} {calls:>5}  {label:<22} {'[generated args] ' if generated else ''}{first}")
        totals.update(outcomes)
    for name, why in skipped:
        print(f"{name:<{width}} {0:>5}  {'skipped':<22} {why}")
    print("\nother requests:")
    for step, obs in zip(steps, observations):
        if step.kind != "tool":
            print(f"  {step.label():<60} {outcome(obs):<15} {preview(obs, 50)}")
    return totals


def check_environment_answer(steps: list[Step], observations: list[dict[str, Any]]) -> None:
    """get-env answers with the server's environment: make sure nothing secret-looking went into the cassette."""
    for step, obs in zip(steps, observations):
        if step.target != "everything__get-env" or "result" not in obs:
            continue
        text = "".join(c.get("text", "") for c in obs["result"].get("content", []))
        try:
            env = json.loads(text)
        except json.JSONDecodeError:
            env = {}
        suspicious = [k for k in env if any(word in k.upper() for word in SECRET_NAMES)]
        suspicious += [
            k
            for k, v in env.items()
            if isinstance(v, str) and "://" in v and "@" in v.split("://", 1)[1].split("/", 1)[0]
        ]
        if suspicious:
            raise Failure(
                f"get-env recorded secret-looking variables {sorted(set(suspicious))}; record with a cleaner environment"
            )
