"""The report as sections of plain tables, shared by every output format.

Renderers (terminal, Markdown, HTML) only lay these out, so the numbers a
person reads are the same in each. A column has a kind that decides how its
cells print: rate (0.873), pct (87.3%, higher is better), lowpct (87.3%, lower
is better), int, ms, text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpgw.evaluator.agentbench import CATEGORIES
from mcpgw.evaluator.report.section import Section
from mcpgw.evaluator.report.stability_tables import comparison, noise, stability

# Short headers for the six categories; tables explain SS/MS in a note.
SHORT_CATEGORY = {c: f"{'SS' if c.startswith('single') else 'MS'} {c.split('/')[1].split('-')[0]}" for c in CATEGORIES}


def cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "rate":
        return f"{0.0 if abs(value) < 5e-10 else value:.3f}"  # no "-0.000" from rounding noise
    if kind in ("pct", "lowpct", "share"):  # share: a percentage that is neither good nor bad (not coloured)
        return f"{100 * value:.1f}%"
    if kind == "ms":
        return f"{value:.1f}"
    if kind == "int":
        return f"{int(value):,}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}:{v}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else ("es" if word.endswith(("s", "sh", "ch")) else "s"))


def _name(path: str) -> str:
    return Path(path).name if path != "call log" else path


def overview(report: Mapping[str, Any]) -> Section:
    inputs = report["inputs"]
    section = Section("Overview", [("item", "text"), ("value", "text")], key="overview")
    section.rows += [
        ["call records", f"{inputs['calls']:,}"],
        ["runs", f"{inputs['runs']:,}"],
        ["answers", f"{inputs['answers']:,}"],
        ["models", ", ".join(report["models"]) or "-"],
    ]
    for path, kind in inputs["task_files"].items():
        section.rows.append([f"task file ({kind})", _name(path)])
    for path, kind in inputs.get("results", {}).items():
        section.rows.append([f"results ({kind})", _name(path)])
    judge = report.get("judge")
    if judge:
        mode = "offline (recordings only)" if judge["offline"] else (judge["base_url"] or "default endpoint")
        section.rows.append(
            [
                "judge",
                f"{judge['model']} via {mode}: {judge['live_calls']} live, "
                f"{judge['replayed']} replayed, {len(judge['misses'])} missing",
            ]
        )
    section.notes += report.get("warnings", [])
    if judge:
        section.notes += judge["misses"][:20]
    return section


def rule_metrics(report: Mapping[str, Any]) -> list[Section]:
    data = report.get("mcpbench_rules")
    if not data:
        return []
    section = Section(
        "MCP-Bench rule-based metrics",
        [
            ("model", "text"),
            ("task file", "text"),
            ("valid tool name", "rate"),
            ("schema compliance", "rate"),
            ("tool call success", "rate"),
            ("valid call failure", "rate"),
            ("planning JSON", "rate"),
            ("calls/task", "ms"),
            ("servers/task", "ms"),
            ("cross-server", "share"),
            ("tasks (with calls)", "text"),
            ("calls", "int"),
        ],
        key="mcpbench_rules",
    )
    unchecked = 0
    for model, result in data.items():
        rows = list(result["files"].items())
        if len(rows) > 1:
            rows.append(("all files (mean of files)", result["overall"]))
        for path, agg in rows:
            scored = agg.get("tasks_scored", agg["tasks"])
            counts = f"{scored} ({agg['tasks_with_calls']})" if "tasks_with_calls" in agg else str(scored)
            section.rows.append([model, _name(path), *(agg[m] for m in _RULES), counts, agg["calls"]])
        unchecked += result["overall"]["unchecked_calls"]
        left_out = result["overall"]["tasks"] - result["overall"].get("tasks_scored", result["overall"]["tasks"])
        if left_out:
            section.notes.append(
                f"{model}: {plural(left_out, 'task')} failed in the harness or in MCP-Bench's "
                "evaluation; left out of the averages, as MCP-Bench leaves them out."
            )
    section.notes.append(
        "MCP-Bench's names and formulas: per task over its calls (tasks without calls have no "
        "rates but count in calls/task and servers/task), per file, then the mean of files."
    )
    if unchecked:
        section.notes.append(
            f"{unchecked:,} valid-name calls had no schema verdict and no known schema; "
            "they count as compliant (pass --tools with schemas to check them)."
        )
    out = [section]
    differ = [(model, d) for model, result in data.items() for d in result.get("disagreements", [])]
    if differ:
        diffs = Section(
            "Re-score vs MCP-Bench's saved evaluation",
            [("model", "text"), ("task", "text"), ("metric", "text"), ("re-scored", "text"), ("saved", "text")],
            key="mcpbench_disagreements",
        )
        diffs.rows += [[model, d["task"], d["metric"], d["ours"], d["reported"]] for model, d in differ]
        out.append(diffs)
    return out


_RULES = (
    "valid_tool_name_rate",
    "input_schema_compliance",
    "tool_call_success_rate",
    "valid_call_failure_rate",
    "planning_json_compliance",
    "avg_tool_calls_per_task",
    "avg_servers_used",
    "cross_server_coordination_rate",
)


def matching(report: Mapping[str, Any]) -> list[Section]:
    data = report.get("mcpeval_match")
    if not data:
        return []
    summary = Section(
        "MCPEval tool-call matching",
        [
            ("model", "text"),
            ("file", "text"),
            ("tasks", "int"),
            ("strict success", "pct"),
            ("flexible success", "pct"),
            ("strict score", "rate"),
            ("flexible score", "rate"),
            ("name", "rate"),
            ("params (strict)", "rate"),
            ("params (flexible)", "rate"),
            ("order", "rate"),
        ],
        key="mcpeval_match",
    )
    details = Section(
        "MCPEval differences per task",
        [
            ("model", "text"),
            ("task", "text"),
            ("missing tools", "text"),
            ("extra tools", "text"),
            ("parameter mismatches", "text"),
        ],
        key="mcpeval_diffs",
    )
    check = report.get("mcpeval_crosscheck")
    if check:  # the results file against what reached the servers
        summary.notes.append(
            f"against the call log: {check['summary']}" + ("" if check["agrees"] else " (they differ)")
        )
    for path, per_model in data.items():
        for model, result in per_model.items():
            s, f = result["summary"]["strict"], result["summary"]["flexible"]
            summary.rows.append(
                [
                    model,
                    _name(path),
                    result["summary"]["total_tasks"],
                    s["success_rate"],
                    f["success_rate"],
                    s["average_score"],
                    f["average_score"],
                    s["tool_name_accuracy"],
                    s["param_match_accuracy"],
                    f["param_match_accuracy"],
                    s["order_score"],
                ]
            )
            if result["unpredicted_tasks"]:
                count = len(result["unpredicted_tasks"])
                summary.notes.append(
                    f"{model}: {count} ground-truth tasks have no prediction (left out, as MCPEval does)"
                )
            for task_id, row in result["tasks"].items():
                mismatches = "; ".join(
                    f"{call}.{param}: expected {exp!r}, got {got!r}"
                    for call, params in row["param_mismatches"].items()
                    for param, (exp, got) in params.items()
                )
                if row["missing_tools"] or row["extra_tools"] or mismatches:
                    details.rows.append([model, task_id, row["missing_tools"], row["extra_tools"], mismatches or "-"])
    return [summary, details] if details.rows else [summary]


def pass_rates(report: Mapping[str, Any]) -> Section | None:
    data = report.get("agentbench")
    if not data:
        return None
    present = [c for c in CATEGORIES if any(c in r["summary"]["categories"] for r in data.values())]
    extra: list[str] = sorted({c for r in data.values() for c in r["summary"]["categories"] if c not in CATEGORIES})
    section = Section(
        "MCP-AgentBench pass rates (MCP-Eval judge)",
        [("model", "text"), ("pass rate", "pct"), ("avg of categories", "pct"), ("judged", "int"), ("unjudged", "int")]
        + [(SHORT_CATEGORY.get(c, c), "pct") for c in present + extra],
        key="agentbench",
    )
    section.notes.append(
        "SS = single server, MS = multi server; then single, parallel or sequential calls. "
        "'avg of categories' is the paper's Avg. column; unjudged answers are not counted."
    )
    for model, result in data.items():
        s = result["summary"]
        section.rows.append(
            [
                model,
                s["pass_rate"],
                s["macro_pass_rate"],
                s["judged"],
                s["unjudged"],
                *(s["categories"].get(c, {}).get("pass_rate") for c in present + extra),
            ]
        )
    return section


def rubric(report: Mapping[str, Any]) -> Section | None:
    data = report.get("mcpbench_judge")
    if not data:
        return None
    section = Section(
        "MCP-Bench LLM judge (mean of 5 shuffled runs, normalised to 0-1)",
        [
            ("model", "text"),
            ("task completion", "rate"),
            ("tool usage", "rate"),
            ("planning effectiveness", "rate"),
            ("overall", "rate"),
            ("judged runs", "int"),
        ],
        key="mcpbench_judge",
    )
    for model, result in data.items():
        m = result["mean"]
        section.rows.append(
            [model, m["task_completion"], m["tool_usage"], m["planning_effectiveness"], m["overall"], m["judged_runs"]]
        )
    return section


def judgements(report: Mapping[str, Any]) -> Section | None:
    data = report.get("mcpeval_judge")
    if not data:
        return None
    section = Section(
        "MCPEval LLM judger",
        [("model", "text"), ("trajectory", "rate"), ("completion", "rate"), ("tasks", "int")],
        key="mcpeval_judge",
    )
    for model, result in data.items():
        m = result["mean"]
        section.rows.append([model, m["trajectory"], m["completion"], m["tasks"]])
    return section


def agreement(report: Mapping[str, Any]) -> Section | None:
    data = report.get("agreement")
    if data is None:
        return None
    section = Section("Judge vs human labels", [("statistic", "text"), ("value", "text")], key="agreement")
    for label, key, kind in (
        ("items", "items", "int"),
        ("percentage agreement (judge vs majority)", "percentage_agreement", "pct"),
        ("Cohen's kappa (judge vs majority)", "cohens_kappa", "rate"),
        ("Fleiss' kappa (among raters)", "fleiss_kappa", "rate"),
        ("all-raters agreement", "all_raters_agreement", "pct"),
        ("all raters and judge agree", "all_raters_agreement_with_judge", "pct"),
    ):
        section.rows.append([label, cell(data[key], kind)])
    return section


AUDIT_COLUMNS = [
    ("server", "text"),
    ("tool", "text"),
    ("calls", "int"),
    ("invalid", "int"),
    ("validity", "pct"),
    ("failing keywords", "text"),
    ("near misses", "int"),
    ("isError", "lowpct"),
    ("timeouts", "int"),
    ("misses", "int"),
    ("p50 ms", "ms"),
    ("p99 ms", "ms"),
]


def audit(report: Mapping[str, Any], limit: int | None = None) -> Section | None:
    data = report.get("audit")
    if not data:
        return None
    section = Section("Per-tool call validity", list(AUDIT_COLUMNS), key="audit")
    tools = data["tools"]
    for row in tools[:limit] if limit else tools:
        section.rows.append(
            [
                row["server"],
                row["tool"],
                row["calls"],
                row["invalid"],
                row["validity"],
                row["invalid_by_keyword"],
                row["near_misses"],
                row["error_rate"],
                row["timeouts"],
                row["misses"],
                row["p50_ms"],
                row["p99_ms"],
            ]
        )
    if limit and len(tools) > limit:
        section.notes.append(f"{len(tools) - limit} more tools not shown (use --format json or html for all)")
    t = data["totals"]
    section.notes.append(
        f"All known tools: {plural(t['calls'], 'call')}, validity {cell(t['validity'], 'pct')}, "
        f"success {cell(t['success'], 'pct')}; {plural(t['unknown_name_calls'], 'call')} to unknown "
        f"names ({t['near_misses']:,} near a known tool)."
    )
    return section


def _short(value: Any, limit: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def audit_examples(report: Mapping[str, Any], limit: int | None = None) -> Section | None:
    """One example per tool and kind of bad call: invalid arguments (per keyword) and wrong names."""
    data = report.get("audit")
    if not data:
        return None
    section = Section(
        "Examples of invalid calls",
        [
            ("server", "text"),
            ("tool", "text"),
            ("kind", "text"),
            ("called as", "text"),
            ("arguments", "text"),
            ("problems", "text"),
            ("run / seq", "text"),
        ],
        key="audit_examples",
    )
    for row in data["tools"]:
        for kind, example in sorted(row["examples"].items()):
            if not (kind.startswith("invalid:") or kind in ("near_miss", "unknown_name")):
                continue
            problems = "; ".join(
                f"{e.get('path', '$')}: {e.get('message') or e.get('keyword')}" for e in example.get("errors", [])[:3]
            )
            section.rows.append(
                [
                    row["server"],
                    row["tool"],
                    kind.replace("invalid:", "invalid ").replace("_", " "),
                    example.get("exposed_name"),
                    _short(example.get("arguments")),
                    problems or "-",
                    f"{example.get('run_id')} / {example.get('seq')}",
                ]
            )
    if not section.rows:
        return None
    if limit and len(section.rows) > limit:
        section.notes.append(f"{len(section.rows) - limit} more examples in the JSON and HTML reports")
        section.rows = section.rows[:limit]
    return section


def servers(report: Mapping[str, Any]) -> Section | None:
    data = report.get("servers")
    if not data:
        return None
    columns = [
        ("server", "text"),
        ("calls", "int"),
        ("success", "pct"),
        ("isError", "int"),
        ("invalid", "int"),
        ("timeouts", "int"),
    ]
    section = Section("Per-server success", columns, key="servers")
    for name, s in data.items():
        section.rows.append([name, s["calls"], s["success"], s["is_error"], s["invalid"], s["timeouts"]])
    return section


def drift(report: Mapping[str, Any]) -> Section | None:
    """Live vs recorded: per server and tool, how many calls got each verdict, and the share that moved."""
    data = report.get("drift")
    if not data or not data.get("by_tool"):
        return None
    verdicts = ("identical", "equal_after_ignore", "changed", "failing", "skipped")
    section = Section(
        "Drift: live vs recorded",
        [("server:tool", "text"), ("calls", "int")]
        + [(v.replace("_", " "), "int") for v in verdicts]
        + [("changed or failing", "lowpct")],
        key="drift",
    )
    for tool, counts in data["by_tool"].items():
        total = sum(counts.get(v, 0) for v in verdicts)
        compared = total - counts.get("skipped", 0)
        moved = counts.get("changed", 0) + counts.get("failing", 0)
        section.rows.append(
            [tool, total, *[counts.get(v, 0) for v in verdicts], moved / compared if compared else None]
        )
    section.notes.append(
        "Counts of re-issued calls per verdict; the last column is the share of compared "
        "(not skipped) calls that changed or now fail."
    )
    section.notes.append(
        f"cassette {data.get('cassette')}: {data.get('calls', 0)} calls re-issued; "
        f"{100 * (data.get('changed_share') or 0):.1f}% changed or failing; "
        f"{data.get('catalog_breaking', 0)} breaking catalog change(s)"
    )
    return section


def provenance(report: Mapping[str, Any]) -> list[Section]:
    """Where each task's tool answers came from, and the rule metrics over the real environment's tasks."""
    data = report.get("provenance")
    if not data or not data["totals"]:
        return []
    names = list(data["totals"])
    section = Section(
        "Answer sources per task (replay.answer_sources)",
        [("task", "text"), *((name, "int") for name in names), ("simulated share", "share"), ("over max", "text")],
        key="provenance",
    )
    for run_id, row in data["tasks"].items():
        section.rows.append(
            [
                run_id,
                *(row["sources"].get(name, 0) for name in names),
                row["simulated_share"],
                "yes" if row["over_max"] else "",
            ]
        )
    section.rows.append(["all tasks", *(data["totals"][name] for name in names), data["simulated_share"], ""])
    if data["simulated_tasks"]:
        section.notes.append(
            f"{plural(len(data['simulated_tasks']), 'task')} rest partly on simulated answers (a "
            "language model's guess at what a tool would say); metrics over the other tasks follow."
        )
    out = [section]
    real = report.get("real_environment")
    if real and report.get("mcpbench_rules"):
        side = Section(
            "MCP-Bench rule metrics: all tasks vs tasks answered from the real environment only",
            [("model", "text"), ("metric", "text"), ("all tasks", "rate"), ("real environment only", "rate")],
            key="real_environment",
        )
        for model, result in report["mcpbench_rules"].items():
            mine = (real.get("mcpbench_rules") or {}).get(model)
            for metric in _RULES:
                side.rows.append(
                    [model, metric, result["overall"].get(metric), mine["overall"].get(metric) if mine else None]
                )
        side.notes.append(f"left out of the second column: {', '.join(real['tasks_left_out'])}")
        out.append(side)
    return out


def all_sections(report: Mapping[str, Any], audit_limit: int | None = None) -> list[Section]:
    out: list[Section | None] = [
        overview(report) if "inputs" in report else None,
        *comparison(report),
        *noise(report),
        *provenance(report),
        *rule_metrics(report),
        *matching(report),
        *stability(report),
        pass_rates(report),
        rubric(report),
        judgements(report),
        agreement(report),
        servers(report),
        audit(report, audit_limit),
        audit_examples(report, audit_limit),
        drift(report),
    ]
    return [s for s in out if s is not None]
