"""Per-tool call-validity audit: which tools do agents call wrongly, and how.

For each (server, tool): calls, calls with invalid arguments by failing JSON
Schema keyword, unknown-name calls aimed near it, isError rate, timeouts,
replay misses, p50/p99 latency, and the first example of each kind of bad call.

An unknown-name call is attributed to the closest known name (difflib ratio,
cutoff 0.6) when one is close enough; otherwise it lands in an "(unknown)"
row under its own name. Names on the server the call named are tried first,
then all known names (those seen in the log plus any catalog passed in). The
lookup is cached per distinct name, so a million calls cost one pass over
plain dicts plus one fuzzy search per distinct unknown name.

Percentiles are nearest-rank over the recorded latencies (no interpolation):
p-th = sorted[ceil(p/100 * n) - 1].
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

UNKNOWN_SERVER = "(unknown)"
SORT_KEYS = (
    "calls",
    "invalid",
    "invalid_rate",
    "near_misses",
    "error_rate",
    "timeouts",
    "misses",
    "p50_ms",
    "p99_ms",
    "validity",
    "success",
    "name",
)
THRESHOLD_METRICS = ("validity", "success", "no_error")
NEAR_CUTOFF = 0.6


class _Row:
    __slots__ = (
        "server",
        "tool",
        "exposed",
        "calls",
        "invalid",
        "keywords",
        "near_misses",
        "near_names",
        "is_error",
        "timeouts",
        "misses",
        "rejected",
        "upstream_errors",
        "ok",
        "latencies",
        "examples",
    )

    def __init__(self, server: str, tool: str, exposed: str) -> None:
        self.server, self.tool, self.exposed = server, tool, exposed
        self.calls = self.invalid = self.near_misses = self.is_error = 0
        self.timeouts = self.misses = self.rejected = self.upstream_errors = self.ok = 0
        self.keywords: dict[str, int] = {}
        self.near_names: dict[str, int] = {}
        self.latencies: list[float] = []
        self.examples: dict[str, dict[str, Any]] = {}


def _example(record: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "run_id": record.get("run_id"),
        "seq": record.get("seq"),
        "exposed_name": record.get("exposed_name"),
        "arguments": record.get("arguments"),
        **extra,
    }


def percentile(ordered: list[float], p: float) -> float | None:
    if not ordered:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[rank - 1]


def audit_calls(records: Iterable[Mapping[str, Any]], catalog: Iterable[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """records: call-log dicts. catalog: (server, tool, exposed name) known besides those seen."""
    rows: dict[tuple[str, str], _Row] = {}
    by_exposed: dict[str, _Row] = {}
    for server, tool, exposed in catalog:
        row = _Row(server, tool, exposed)
        rows[(server, tool)] = row
        by_exposed[exposed] = row
    unknown: dict[str, _Unknown] = {}  # called name -> its calls, in the order names are first called
    for record in records:
        if not record.get("known_tool"):
            called = unknown.get(record["exposed_name"])
            if called is None:
                called = unknown[record["exposed_name"]] = _Unknown(_example(record))
            called.calls += 1
            called.rejected += record["outcome"] == "rejected"
            continue
        server, tool = record.get("server") or UNKNOWN_SERVER, record.get("tool") or record["exposed_name"]
        if (server, tool) not in rows:
            rows[(server, tool)] = _Row(server, tool, record["exposed_name"])
            by_exposed.setdefault(record["exposed_name"], rows[(server, tool)])
        row = rows[(server, tool)]
        row.calls += 1
        outcome = record["outcome"]
        if outcome == "ok":
            row.ok += 1
        elif outcome == "timeout":
            row.timeouts += 1
        elif outcome in ("miss", "diverged"):  # replay refused: not recorded, or the run left the recording
            row.misses += 1
        elif outcome == "rejected":
            row.rejected += 1
        elif outcome == "upstream_error":
            row.upstream_errors += 1
        if record.get("is_error"):
            row.is_error += 1
            if "is_error" not in row.examples:
                row.examples["is_error"] = _example(record)
        latency = record.get("latency_ms")
        if latency is not None:
            row.latencies.append(latency)
        validation = record.get("validation")
        if validation and validation.get("valid") is False:
            row.invalid += 1
            _count_keywords(row, record, validation.get("errors") or ())
        if outcome in ("timeout", "miss", "diverged") and outcome not in row.examples:
            row.examples[outcome] = _example(record)
    _attribute_unknown(unknown, rows, by_exposed)
    return _summarise(rows)


def _count_keywords(row: _Row, record: Mapping[str, Any], errors: Iterable[Mapping[str, Any]]) -> None:
    seen = set()
    for error in errors:
        keyword = str(error.get("keyword") or "unknown")
        if keyword in seen:
            continue  # one call counts once per keyword, however many paths failed it
        seen.add(keyword)
        row.keywords[keyword] = row.keywords.get(keyword, 0) + 1
        key = f"invalid:{keyword}"
        if key not in row.examples:
            row.examples[key] = _example(record, errors=list(errors)[:5])
    if not seen:
        row.keywords["unknown"] = row.keywords.get("unknown", 0) + 1


def _prefix(name: str) -> str | None:
    """The server part of an exposed name: before the first "__" (default naming) or ":" (benchmark)."""
    for separator in ("__", ":"):
        if separator in name:
            return name.split(separator, 1)[0]
    return None


def _closest(called: str, names: list[str], by_prefix: dict[str | None, list[str]]) -> str | None:
    # A misspelt tool on a server the agent named right is aimed at that server's tools: look
    # there first (a handful of names, not hundreds); only if none is close, at every name.
    same_server = by_prefix.get(_prefix(called)) if _prefix(called) is not None else None
    if same_server:
        match = difflib.get_close_matches(called, same_server, n=1, cutoff=NEAR_CUTOFF)
        if match:
            return match[0]
    match = difflib.get_close_matches(called, names, n=1, cutoff=NEAR_CUTOFF)
    return match[0] if match else None


class _Unknown:
    """The calls to one name the gateway did not know: counted, the first kept as the example."""

    __slots__ = ("calls", "rejected", "example")

    def __init__(self, example: dict[str, Any]) -> None:
        self.calls = self.rejected = 0
        self.example = example


def _attribute_unknown(
    unknown: dict[str, _Unknown], rows: dict[tuple[str, str], _Row], by_exposed: dict[str, _Row]
) -> None:
    """Each unknown name's calls go to the tool it is a near miss of, or to a row of its own. Names come in
    the order first called, so a row's example is still its first such call in the log."""
    names = list(by_exposed)
    by_prefix: dict[str | None, list[str]] = {}
    for name in names:
        by_prefix.setdefault(_prefix(name), []).append(name)
    for called, calls in unknown.items():
        match = _closest(called, names, by_prefix)
        if match is None:
            row = rows.get((UNKNOWN_SERVER, called))
            if row is None:
                row = rows[(UNKNOWN_SERVER, called)] = _Row(UNKNOWN_SERVER, called, called)
            row.calls += calls.calls  # calls to a name nothing resembles: shown as their own row
            row.rejected += calls.rejected
            row.examples.setdefault("unknown_name", calls.example)
            continue
        row = by_exposed[match]
        row.near_misses += calls.calls
        row.near_names[called] = row.near_names.get(called, 0) + calls.calls
        row.examples.setdefault("near_miss", calls.example)


def _summarise(rows: dict[tuple[str, str], _Row]) -> dict[str, Any]:
    tools = []
    totals: dict[str, Any] = {
        "calls": 0,
        "invalid": 0,
        "near_misses": 0,
        "is_error": 0,
        "timeouts": 0,
        "misses": 0,
        "ok": 0,
        "unknown_name_calls": 0,
    }
    for row in rows.values():
        row.latencies.sort()
        known = row.server != UNKNOWN_SERVER
        entry = {
            "server": row.server,
            "tool": row.tool,
            "exposed_name": row.exposed,
            "known": known,
            "calls": row.calls,
            "invalid": row.invalid,
            "invalid_by_keyword": dict(sorted(row.keywords.items())),
            "near_misses": row.near_misses,
            "near_miss_names": row.near_names,
            "is_error": row.is_error,
            "timeouts": row.timeouts,
            "misses": row.misses,
            "rejected": row.rejected,
            "upstream_errors": row.upstream_errors,
            "ok": row.ok,
            "invalid_rate": row.invalid / row.calls if row.calls else None,
            "error_rate": row.is_error / row.calls if row.calls else None,
            "validity": 1 - row.invalid / row.calls if row.calls and known else None,
            "success": row.ok / row.calls if row.calls and known else None,
            "no_error": 1 - row.is_error / row.calls if row.calls and known else None,
            "p50_ms": percentile(row.latencies, 50),
            "p99_ms": percentile(row.latencies, 99),
            "examples": row.examples,
        }
        tools.append(entry)
        if known:
            for key in ("calls", "invalid", "near_misses", "is_error", "timeouts", "misses", "ok"):
                totals[key] += getattr(row, key)
        else:
            totals["unknown_name_calls"] += row.calls
    totals["unknown_name_calls"] += totals["near_misses"]
    calls = totals["calls"]
    totals["validity"] = 1 - totals["invalid"] / calls if calls else None
    totals["success"] = totals["ok"] / calls if calls else None
    totals["no_error"] = 1 - totals["is_error"] / calls if calls else None
    return {"tools": sort_tools(tools, "invalid_rate"), "totals": totals}


def sort_tools(tools: list[dict[str, Any]], key: str, descending: bool = True) -> list[dict[str, Any]]:
    """Sort rows by one column; rows without a value go last, ties broken by server and tool."""
    if key not in SORT_KEYS:
        raise ValueError(f"cannot sort by {key!r}; choose one of {', '.join(SORT_KEYS)}")
    if key == "name":
        return sorted(tools, key=lambda t: (t["server"], t["tool"]))
    present = [t for t in tools if t.get(key) is not None]
    absent = [t for t in tools if t.get(key) is None]
    present.sort(key=lambda t: (t["server"], t["tool"]))
    present.sort(key=lambda t: t[key], reverse=descending)
    return present + sorted(absent, key=lambda t: (t["server"], t["tool"]))


def parse_thresholds(text: str) -> dict[str, float]:
    """'validity=0.95,success=0.9' -> {...}; a bare number means validity."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.rpartition("=")
        name = name.strip() or "validity"
        if name not in THRESHOLD_METRICS:
            raise ValueError(f"unknown threshold {name!r}; use {', '.join(THRESHOLD_METRICS)} (e.g. validity=0.95)")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(
                f"--fail-under {part!r}: {value!r} is not a number; write METRIC=NUMBER with a number "
                f"between 0 and 1, e.g. validity=0.95 (metrics: {', '.join(THRESHOLD_METRICS)})"
            ) from None
        if not 0.0 <= number <= 1.0:
            raise ValueError(f"threshold {name!r} must be between 0 and 1, got {number}")
        out[name] = number
    return out


def check_thresholds(report: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[str]:
    """Human-readable failures: every known tool (and the totals) under a threshold."""
    failures = []
    for metric, floor in thresholds.items():
        total = report["totals"].get(metric)
        if total is not None and total < floor:
            failures.append(f"all tools: {metric} {total:.3f} < {floor}")
        for tool in report["tools"]:
            value = tool.get(metric)
            if value is not None and value < floor:
                name = f"{tool['server']}/{tool['tool']}"
                failures.append(f"{name}: {metric} {value:.3f} < {floor} ({tool['calls']} calls)")
    return failures
