import io

from rich.console import Console

from mcpgw.evaluator.audit import audit_calls
from mcpgw.evaluator.report import render
from mcpgw.evaluator.report.tables import all_sections, cell
from mcpgw.evaluator.report.text import print_report
from tests.evaluator.conftest import call


def test_cell_formats():
    assert cell(None, "rate") == "-" and cell(0.8734, "rate") == "0.873" and cell(-1e-17, "rate") == "0.000"
    assert cell(0.8734, "pct") == "87.3%" and cell(12345, "int") == "12,345" and cell(1.25, "ms") == "1.2"
    assert cell({"type": 2}, "text") == "type:2" and cell(["a", "b"], "text") == "a, b" and cell([], "text") == "-"


def report_with(**parts):
    base = {
        "generated_at": "now",
        "inputs": {"calls": 0, "runs": 0, "answers": 0, "task_files": {}, "catalog_tools": 0},
        "models": [],
        "warnings": ["careful | here"],
    }
    return {**base, **parts}


def test_only_sections_with_data_appear():
    assert [s.key for s in all_sections(report_with())] == ["overview"]
    audit = audit_calls([call()])
    keys = [s.key for s in all_sections(report_with(audit=audit))]
    assert keys == ["overview", "audit"]  # no bad calls: no examples section
    bad = audit_calls(
        [
            call(
                arguments={"city": 3},
                validation={
                    "valid": False,
                    "errors": [{"path": "$.city", "message": "expected type string, received 3", "keyword": "type"}],
                },
            )
        ]
    )
    examples = all_sections(report_with(audit=bad))[-1]
    assert examples.key == "audit_examples"
    assert examples.rows == [
        [
            "weather",
            "forecast",
            "invalid type",
            "weather__forecast",
            '{"city": 3}',
            "$.city: expected type string, received 3",
            "r1 / 0",
        ]
    ]


def test_markdown_and_terminal_carry_the_same_numbers():
    audit = audit_calls([call(), call(validation={"valid": False, "errors": [{"keyword": "enum"}]})])
    report = report_with(audit=audit)
    markdown = render(report, "markdown")
    assert "| weather | forecast | 2 | 1 | 50.0% | enum:1 |" in markdown
    assert "careful \\| here" in markdown  # pipes in text do not break the table
    buffer = io.StringIO()
    print_report(report, Console(file=buffer, width=200, no_color=True))
    text = buffer.getvalue()
    assert "50.0%" in text and "enum:1" in text and "careful | here" in text
