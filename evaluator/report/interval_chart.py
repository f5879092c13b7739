"""Inline SVG of aggregates with their intervals (issue 53): a dot at the value, a whisker from low to high,
on a 0-100% axis; several series (the two sides of --compare) side by side under one label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from mcpgw.evaluator.report.charts import CHAR_W, PALETTE


def intervals(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[Mapping[str, Any] | None]]],
    title: str,
    width: int = 920,
) -> str:
    """series: (name, one {value, low, high} per label, or None where that series has none)."""
    if not labels or not series:
        return ""
    label_w = min(360, max(80, int(max(len(label) for label in labels) * CHAR_W) + 12))
    plot_w = max(160, width - label_w - 20)
    row_h, top = 14 * len(series) + 8, 34 + (16 if len(series) > 1 else 0)
    height = top + row_h * len(labels) + 28
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
        f'<text x="0" y="18" class="chart-title">{escape(title)}</text>',
    ]
    if len(series) > 1:  # a legend: which colour is which side
        legend_x = float(label_w)
        for i, (name, _) in enumerate(series):
            out.append(f'<circle cx="{legend_x + 5:.1f}" cy="34" r="4" fill="{PALETTE[i % len(PALETTE)]}"/>')
            out.append(f'<text x="{legend_x + 14:.1f}" y="38" class="note">{escape(name)}</text>')
            legend_x += 30 + len(name) * CHAR_W
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * plot_w
        out.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + row_h * len(labels)}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 8}" class="tick" text-anchor="middle">{int(tick * 100)}%</text>')
    for i, label in enumerate(labels):
        y = top + i * row_h
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" class="label" text-anchor="end">{escape(label)}</text>'
        )
        for j, (name, rows) in enumerate(series):
            row = rows[i]
            if row is None:
                continue
            cy = y + 8 + 14 * j
            colour = PALETTE[j % len(PALETTE)]
            low, high, value = (label_w + _clamp(row[k]) * plot_w for k in ("low", "high", "value"))
            tip = f"{name}: {100 * row['value']:.1f}% ({100 * row['low']:.1f}-{100 * row['high']:.1f}%)"
            out.append(f'<line x1="{low:.1f}" y1="{cy}" x2="{high:.1f}" y2="{cy}" stroke="{colour}" stroke-width="2"/>')
            out.append(
                f'<circle cx="{value:.1f}" cy="{cy}" r="4" fill="{colour}"><title>{escape(tip)}</title></circle>'
            )
    out.append("</svg>")
    return "".join(out)


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def shares(aggregates: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The aggregates a 0-100% axis can show: outcome rates, pass@k, pass^k and flip shares."""
    return [n for n in aggregates if n.endswith((" rate", " flip share")) or " pass@" in n or " pass^" in n]


def stability_charts(report: Mapping[str, Any]) -> list[str]:
    out = []
    section = report.get("stability")
    for model, entry in ((section or {}).get("models") or {}).items():
        names = shares(entry["aggregates"])
        rows = [entry["aggregates"][n] for n in names]
        out.append(intervals(names, [(model, rows)], f"Repeats of {model}: aggregates with their intervals"))
    sides = report.get("sides") or {}
    if len(sides) == 2:  # --compare or --noise: the two sides' intervals side by side
        aggregates = {side: only["aggregates"] for side, s in sides.items() for only in s["models"].values()}
        names = sorted({n for a in aggregates.values() for n in shares(a)})
        series = [(side, [a.get(n) for n in names]) for side, a in aggregates.items()]
        out.append(intervals(names, series, "The two sides' aggregates with their intervals"))
    return [c for c in out if c]
