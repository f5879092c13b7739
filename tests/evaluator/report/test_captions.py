"""The HTML report says what its charts and tables hold: which bars are better high, what a column counts."""

from __future__ import annotations

import re
from collections import defaultdict

from mcpgw.evaluator.report import render
from mcpgw.evaluator.report.html import score_charts
from mcpgw.evaluator.report.tables import drift
from tests.evaluator.conftest import call
from tests.evaluator.report.test_html import minimal_report


def test_mcpbench_chart_caption_names_the_one_lower_is_better_metric():
    overall = defaultdict(lambda: 0.5)  # whatever the rate keys are called, the caption is what is checked
    html = "".join(score_charts({"mcpbench_rules": {"model-a": {"overall": overall}}}))
    caption = re.search(r"MCP-Bench rule-based metrics per model \(([^)]*)\)", html)
    assert caption is not None
    assert caption.group(1) == "higher is better, except valid call failure: lower is better"
    assert "failure rate: lower is better" not in html


def test_drift_table_counts_under_count_columns_and_one_labelled_share():
    data = {
        "cassette": "c",
        "calls": 5,
        "changed_share": 0.5,
        "catalog_breaking": 0,
        "by_tool": {
            "fx:echo": {"identical": 1, "equal_after_ignore": 0, "changed": 1, "failing": 0, "skipped": 0},
            "fx:wipe": {"identical": 0, "equal_after_ignore": 1, "changed": 0, "failing": 1, "skipped": 1},
        },
    }
    section = drift({"drift": data})
    headers = [name for name, _ in section.columns]
    assert headers == [
        "server:tool",
        "calls",
        "identical",
        "equal after ignore",
        "changed",
        "failing",
        "skipped",
        "changed or failing",
    ]
    assert section.rows[0] == ["fx:echo", 2, 1, 0, 1, 0, 0, 0.5]
    assert section.rows[1] == ["fx:wipe", 3, 0, 1, 0, 1, 1, 0.5]  # the skipped call is not compared
    report = minimal_report([call()])
    report["drift"] = data
    html = render(report, "html")
    row = re.search(r"<tr><td[^>]*>fx:wipe</td>(.*?)</tr>", html).group(1)
    assert re.findall(r">([^<]*)</td>", row) == ["3", "0", "1", "0", "1", "1", "50.0%"]
