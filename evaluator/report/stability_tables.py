"""The repeats' sections of a report (evaluator.repeats, evaluator.compare) as plain tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator.report.section import Section


def _level(section: Mapping[str, Any]) -> str:
    return f"{100 * section['ci']:g}%"


def stability(report: Mapping[str, Any]) -> list[Section]:
    data = report.get("stability")
    if not data:
        return []
    return stability_sections(data)


def stability_sections(data: Mapping[str, Any], label: str = "") -> list[Section]:
    out = []
    for model, entry in data["models"].items():
        title = f"Repeats: {model}" + (f" ({label})" if label else "")
        agg = Section(
            f"{title}, aggregates over tasks",
            [
                ("aggregate", "text"),
                ("value", "rate"),
                (f"{_level(data)} low", "rate"),
                ("high", "rate"),
                ("tasks", "int"),
            ],
            key="stability",
        )
        for name, row in entry["aggregates"].items():
            agg.rows.append([name, row["value"], row["low"], row["high"], row["tasks"]])
        agg.notes.append(
            f"intervals: {data['interval']}, {data['bootstrap']:,} resamples, seed {data['seed']}; "
            f"repeats: {data['scheme']}"
        )
        out.append(agg)
        per_task = Section(
            f"{title}, per task",
            [
                ("task", "text"),
                ("runs", "int"),
                ("measure", "text"),
                ("values", "text"),
                ("mean", "rate"),
                ("sd", "rate"),
            ],
            key="stability_tasks",
        )
        for task, row in entry["tasks"].items():
            for name, m in row["metrics"].items():
                values = " ".join(f"{v:.3g}" for v in m["values"])
                per_task.rows.append([task, len(row["runs"]), name, values, m["mean"], m["sd"]])
            for name, o in row["outcomes"].items():
                dots = "".join("●" if v else "○" for v in o["values"])
                flip = ", flips" if o["flips"] else ""
                per_task.rows.append(
                    [task, len(row["runs"]), name, f"{dots} {o['successes']}/{o['n']}{flip}", None, None]
                )
        out.append(per_task)
    return out


def comparison(report: Mapping[str, Any]) -> list[Section]:
    data = report.get("compare")
    if not data:
        return []
    section = Section(
        f"Compare: {data['y']} - {data['x']}",
        [
            ("aggregate", "text"),
            ("x", "rate"),
            ("y", "rate"),
            ("y - x", "rate"),
            (f"{_level(data)} low", "rate"),
            ("high", "rate"),
            ("above the noise", "text"),
            ("y ahead / x ahead / tied", "text"),
        ],
        key="compare",
    )
    for name, row in data["aggregates"].items():
        section.rows.append(
            [
                name,
                row["x"],
                row["y"],
                row["difference"],
                row["low"],
                row["high"],
                "yes" if row["above_noise"] else "no",
                f"{row['y_ahead']} / {row['x_ahead']} / {row['tied']}",
            ]
        )
    section.notes.append(
        f"x = {data['x']} ({data['x_model']}), y = {data['y']} ({data['y_model']}), {data['shared_tasks']} shared tasks; "
        f"test: {data['test']}, {data['bootstrap']:,} resamples, seed {data['seed']}; above the noise when the "
        "interval leaves 0 out"
    )
    for side in ("x", "y"):
        if data[f"only_{side}"]:
            section.notes.append(f"only in {data[side]} (left out): {', '.join(data[f'only_{side}'][:10])}")
    out = [section]
    for name, side in (report.get("sides") or {}).items():
        out += stability_sections(side, name)
    return out


def noise(report: Mapping[str, Any]) -> list[Section]:
    data = report.get("noise")
    if not data:
        return []
    section = Section(
        f"Noise: {data['live']} (tools live) vs {data['frozen']} (tools replayed), {data['model']}",
        [
            ("measure", "text"),
            ("live variance", "rate"),
            ("frozen variance", "rate"),
            ("environment's share", "share"),
            (f"{_level(data)} low", "share"),
            ("high", "share"),
            ("tasks", "int"),
        ],
        key="noise",
    )
    for name, row in data["metrics"].items():
        section.rows.append(
            [
                name,
                row["live_variance"],
                row["frozen_variance"],
                row["environment_share"],
                row["low"],
                row["high"],
                row["tasks"],
            ]
        )
    section.notes.append(
        "variance: per task over its repeats, averaged over the shared tasks; environment's share: "
        "(live - frozen) / live, with a bootstrap interval over tasks; none when live repeats never differ"
    )
    drift = Section(
        "Noise: tool answers that differed between live repeats",
        [
            ("task", "text"),
            ("calls repeated", "int"),
            ("answers differed", "int"),
            ("examples", "text"),
            ("differed frozen", "int"),
        ],
        key="noise_tasks",
    )
    for task, row in data["tasks"].items():
        examples = "; ".join(row["examples"]) or "-"
        drift.rows.append([task, row["repeated_calls"], row["differed"], examples, row.get("frozen_differed")])
    out = [section, drift]
    for name, side in (report.get("sides") or {}).items():
        out += stability_sections(side, name)
    return out
