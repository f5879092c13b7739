"""Inline SVG charts for the HTML report: no scripts, no fonts, no network.

Two shapes cover every chart the report needs:
- `hbars`: one horizontal bar per label for a 0-1 value (per-tool validity,
  per-server success), worst first, with a note at the end of each bar;
- `grouped`: vertical bars, one group per category and one colour per series
  (scores per model and category).
Text is escaped; sizes are computed from the data so long labels never overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#3b6ea8", "#e07b39", "#4c9a5b", "#b24a6b", "#7d62b3", "#8c6d46", "#3a9ca3", "#c9a227")
CHAR_W = 6.6  # average glyph width at 12px in a sans-serif face, for layout only


def _bar_colour(value: float) -> str:
    if value >= 0.9:
        return "#4c9a5b"
    if value >= 0.5:
        return "#d9a21b"
    return "#c2412d"


def hbars(rows: Sequence[tuple[str, float | None, str]], title: str, width: int = 920) -> str:
    """rows: (label, value in [0, 1] or None, note)."""
    if not rows:
        return ""
    label_w = min(340, max(80, int(max(len(r[0]) for r in rows) * CHAR_W) + 12))
    note_w = min(280, max(60, int((len("100.0% ") + max(len(r[2]) for r in rows)) * CHAR_W) + 12))
    bar_w = max(120, width - label_w - note_w - 20)
    row_h, top = 22, 34
    height = top + row_h * len(rows) + 28
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
        f'<text x="0" y="18" class="chart-title">{escape(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * bar_w
        out.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + row_h * len(rows)}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 8}" class="tick" text-anchor="middle">{int(tick * 100)}%</text>')
    for i, (label, value, note) in enumerate(rows):
        y = top + i * row_h
        out.append(
            f'<text x="{label_w - 8}" y="{y + 15}" class="label" text-anchor="end">'
            f"{escape(_clip(label, label_w))}</text>"
        )
        if value is None:
            out.append(f'<text x="{label_w + 4}" y="{y + 15}" class="note">no data</text>')
            continue
        w = max(1.0, value * bar_w)
        shown = f"{100 * value:.1f}% {escape(note)}"
        out.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" rx="2" '
            f'fill="{_bar_colour(value)}"><title>{escape(label)}: {shown}</title></rect>'
        )
        out.append(f'<text x="{label_w + bar_w + 8}" y="{y + 15}" class="note">{shown}</text>')
    out.append("</svg>")
    return "\n".join(out)


def grouped(
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    title: str,
    width: int = 920,
    as_percent: bool = True,
) -> str:
    """Vertical grouped bars. series: (name, one value in [0, 1] per group)."""
    if not groups or not series:
        return ""
    plot_h, top, left = 220, 54, 44
    legend_rows = 1 + (sum(len(n) for n, _ in series) * CHAR_W + 40 * len(series)) // (width - left)
    label_lines = max(1, max(len(_wrap(g)) for g in groups))
    height = top + int(legend_rows) * 16 + plot_h + 18 + 14 * label_lines
    plot_top = top + int(legend_rows) * 16
    group_w = (width - left - 10) / len(groups)
    bar_w = max(4.0, min(36.0, (group_w - 16) / len(series)))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
        f'<text x="0" y="18" class="chart-title">{escape(title)}</text>',
    ]
    x, y = left, 40
    for index, (name, _) in enumerate(series):  # legend, wrapping when it runs out of room
        item_w = 24 + len(name) * CHAR_W + 16
        if x + item_w > width and x > left:
            x, y = left, y + 16
        colour = PALETTE[index % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y - 9}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 1}" class="label">{escape(name)}</text>')
        x += item_w
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        ty = plot_top + plot_h * (1 - tick)
        out.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{width - 10}" y2="{ty:.1f}" class="grid"/>')
        text = f"{int(tick * 100)}%" if as_percent else f"{tick:.2f}"
        out.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" class="tick" text-anchor="end">{text}</text>')
    for g, group in enumerate(groups):
        gx = left + g * group_w + (group_w - bar_w * len(series)) / 2
        for s, (name, values) in enumerate(series):
            value = values[g] if g < len(values) else None
            if value is None:
                continue
            h = max(1.0, value * plot_h)
            bx = gx + s * bar_w
            shown = f"{100 * value:.1f}%" if as_percent else f"{value:.3f}"
            out.append(
                f'<rect x="{bx:.1f}" y="{plot_top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}">'
                f"<title>{escape(name)}, {escape(group)}: {shown}</title></rect>"
            )
        for line_no, text in enumerate(_wrap(group)):
            out.append(
                f'<text x="{left + (g + 0.5) * group_w:.1f}" y="{plot_top + plot_h + 16 + 14 * line_no}" '
                f'class="tick" text-anchor="middle">{escape(text)}</text>'
            )
    out.append("</svg>")
    return "\n".join(out)


def _wrap(label: str, limit: int = 18) -> list[str]:
    words, lines, current = label.replace("/", "/ ").split(), [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > limit:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip() if not current.endswith("/") else current + word
    if current:
        lines.append(current)
    return lines[:3]


def _clip(label: str, room: float) -> str:
    most = int(room / CHAR_W) - 1
    return label if len(label) <= most else label[: max(1, most - 1)] + "…"
