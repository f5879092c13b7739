"""One self-contained HTML file: inline CSS and SVG, no scripts, opens offline.

Charts first (per-tool validity, per-server success, scores per model and
category), then every table of the other formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from mcpgw.evaluator.agentbench import CATEGORIES
from mcpgw.evaluator.report import charts
from mcpgw.evaluator.report.interval_chart import stability_charts
from mcpgw.evaluator.report.section import Section
from mcpgw.evaluator.report.tables import all_sections, audit_examples, cell, plural
from mcpgw.evaluator.report.tables import audit as audit_section

MAX_TOOL_BARS = 40

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 24px auto;
       max-width: 1000px; color: #1f2430; background: #fff; padding: 0 16px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #dde; }
.meta { color: #667; font-size: 13px; }
.chart { display: block; margin: 12px 0 20px; font-size: 12px; max-width: 100%; height: auto; }
.scroll { overflow-x: auto; }
.chart-title { font-size: 14px; font-weight: 600; fill: #1f2430; }
.label { fill: #1f2430; } .note { fill: #445; } .tick { fill: #667; font-size: 11px; }
.grid { stroke: #e4e6eb; stroke-width: 1; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; width: 100%; }
th, td { border-bottom: 1px solid #e4e6eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f5f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.bad { color: #b3261e; font-weight: 600; } td.warn { color: #8a5a00; }
ul.notes { color: #556; font-size: 13px; } .empty { color: #889; font-style: italic; }
"""

_NUMERIC = {"rate", "pct", "lowpct", "share", "int", "ms"}


def _table(section: Section) -> str:
    parts = [f"<h2>{escape(section.title)}</h2>"]
    if section.rows:
        head = "".join(f"<th>{escape(h)}</th>" for h, _ in section.columns)
        body = []
        for row in section.rows:
            cells = []
            for value, (_, kind) in zip(row, section.columns, strict=True):
                cls = "num" if kind in _NUMERIC else ""
                if kind in ("pct", "lowpct") and isinstance(value, float):
                    good = value if kind == "pct" else 1.0 - value
                    cls += " bad" if good < 0.5 else (" warn" if good < 0.9 else "")
                cells.append(f'<td class="{cls.strip()}">{escape(cell(value, kind))}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        parts.append(
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
        )
    if section.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in section.notes) + "</ul>")
    return "\n".join(parts)


def tool_validity_chart(audit: Mapping[str, Any]) -> str:
    known = [t for t in audit["tools"] if t["known"] and t["calls"]]
    known.sort(key=lambda t: (t["validity"], -t["calls"], t["server"], t["tool"]))
    rows = [
        (f"{t['server']}/{t['tool']}", t["validity"], f"of {plural(t['calls'], 'call')}{_near(t['near_misses'])}")
        for t in known[:MAX_TOOL_BARS]
    ]
    title = "Per-tool argument validity (share of calls passing the input schema), worst first"
    if len(known) > MAX_TOOL_BARS:
        title += f" - {MAX_TOOL_BARS} of {len(known)} tools"
    return charts.hbars(rows, title)


def _near(count: int) -> str:
    return "" if not count else f", {count} near miss" + ("es" if count > 1 else "")


def server_chart(servers: Mapping[str, Any]) -> str:
    rows = [
        (name, s["success"], f"of {plural(s['calls'], 'call')}")
        for name, s in sorted(
            servers.items(), key=lambda kv: (kv[1]["success"] if kv[1]["success"] is not None else 2, kv[0])
        )
    ]
    return charts.hbars(rows, "Per-server success (calls that returned without error)")


def score_charts(report: Mapping[str, Any]) -> list[str]:
    out = []
    agent = report.get("agentbench")
    if agent:
        present = [c for c in CATEGORIES if any(c in r["summary"]["categories"] for r in agent.values())]
        present += sorted({c for r in agent.values() for c in r["summary"]["categories"] if c not in CATEGORIES})
        groups = present + ["overall"]
        series = [
            (
                model,
                [r["summary"]["categories"].get(c, {}).get("pass_rate") for c in present] + [r["summary"]["pass_rate"]],
            )
            for model, r in agent.items()
        ]
        out.append(charts.grouped(groups, series, "MCP-AgentBench pass rate per model and category"))
    rules = report.get("mcpbench_rules")
    if rules:
        names = ["valid tool name", "schema compliance", "tool call success", "valid call failure"]
        keys = ["valid_tool_name_rate", "input_schema_compliance", "tool_call_success_rate", "valid_call_failure_rate"]
        series = [(model, [r["overall"][k] for k in keys]) for model, r in rules.items()]
        title = "MCP-Bench rule-based metrics per model (higher is better, except valid call failure: lower is better)"
        out.append(charts.grouped(names, series, title))
    judged = report.get("mcpbench_judge")
    if judged:
        axes = ["task_completion", "tool_usage", "planning_effectiveness", "overall"]
        series = [(model, [r["mean"][a] for a in axes]) for model, r in judged.items()]
        out.append(
            charts.grouped(
                [a.replace("_", " ") for a in axes], series, "MCP-Bench LLM judge per model", as_percent=False
            )
        )
    matching = report.get("mcpeval_match")
    if matching:
        groups = ["strict success", "flexible success", "strict score", "flexible score"]
        series = []
        for path, per_model in matching.items():
            for model, r in per_model.items():
                s, f = r["summary"]["strict"], r["summary"]["flexible"]
                name = model if len(matching) == 1 else f"{model} ({Path(path).name})"
                series.append((name, [s["success_rate"], f["success_rate"], s["average_score"], f["average_score"]]))
        out.append(charts.grouped(groups, series, "MCPEval tool-call matching per model"))
    judgements = report.get("mcpeval_judge")
    if judgements:
        series = [(model, [r["mean"]["trajectory"], r["mean"]["completion"]]) for model, r in judgements.items()]
        out.append(
            charts.grouped(["trajectory", "completion"], series, "MCPEval LLM judger per model", as_percent=False)
        )
    return [c for c in out if c]


def _page(title: str, body: list[str], subtitle: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
        f'<style>{CSS}</style></head><body>\n<h1>{escape(title)}</h1><p class="meta">{escape(subtitle)}</p>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )


SOURCE_COLOURS = {
    "recorded": "#2e7d32",
    "equivalent": "#66bb6a",
    "live": "#1565c0",
    "simulated": "#ef6c00",
    "missed": "#9e9e9e",
}


def provenance_chart(data: Mapping[str, Any]) -> str:
    """A bar per task: its tool answers by source, simulated in orange."""
    rows = []
    for run_id, row in data["tasks"].items():
        total = row["answered"] or 1
        parts = "".join(
            f'<span title="{escape(name)}: {n}" style="display:inline-block;height:12px;width:{300 * n / total:.1f}px;'
            f'background:{SOURCE_COLOURS.get(name, "#555")}"></span>'
            for name, n in row["sources"].items()
        )
        mark = " &#9888;" if row["over_max"] else ""
        rows.append(
            f"<tr><td>{escape(run_id)}{mark}</td><td>{parts}</td><td>{100 * row['simulated_share']:.0f}% "
            "simulated</td></tr>"
        )
    legend = " ".join(f'<span style="color:{c}">&#9632;</span> {escape(n)}' for n, c in SOURCE_COLOURS.items())
    return (
        f"<h3>Where each task's tool answers came from</h3><p>{legend}</p>"
        f'<table class="provenance">{"".join(rows)}</table>'
    )


def html_report(report: Mapping[str, Any]) -> str:
    body = ["<h2>Charts</h2>"]
    if (report.get("provenance") or {}).get("totals"):
        body.append(provenance_chart(report["provenance"]))
    if report.get("audit"):
        body.append(tool_validity_chart(report["audit"]))
    if report.get("servers"):
        body.append(server_chart(report["servers"]))
    scores = score_charts(report) + stability_charts(report)
    body += scores or ['<p class="empty">No per-model scores: give task files (and a judge for MCP-AgentBench).</p>']
    body += [_table(s) for s in all_sections(report)]
    calls = (report.get("inputs") or {}).get("calls", 0)  # a --compare report has two sides, no inputs of its own
    subtitle = f"generated {report.get('generated_at', '')} from {calls:,} call record{'' if calls == 1 else 's'}"
    return _page("MCP evaluation report", body, subtitle)


def html_audit(audit: Mapping[str, Any]) -> str:
    body = [tool_validity_chart(audit)]
    for section in (audit_section({"audit": audit}), audit_examples({"audit": audit})):
        if section:
            body.append(_table(section))
    totals = audit["totals"]
    unknown = totals.get("unknown_name_calls", 0)
    known = totals["calls"]
    subtitle = f"{known:,} call{'' if known == 1 else 's'} to known tools" + (
        f", {unknown:,} to unknown names (listed as such)" if unknown else ""
    )
    return _page("Per-tool call-validity audit", body, subtitle)
