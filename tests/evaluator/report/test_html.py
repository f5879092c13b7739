import re
from html.parser import HTMLParser

from mcpgw.evaluator.audit import audit_calls
from mcpgw.evaluator.report import charts, render, render_audit
from mcpgw.evaluator.report.html import MAX_TOOL_BARS
from tests.evaluator.conftest import call


class Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs


def minimal_report(records):
    audit = audit_calls(records)
    return {
        "generated_at": "now",
        "inputs": {"calls": len(records), "runs": 1, "answers": 0, "task_files": {}, "catalog_tools": 0},
        "models": ["m"],
        "warnings": [],
        "audit": audit,
        "servers": {"weather": {"calls": 2, "ok": 1, "is_error": 0, "invalid": 1, "timeouts": 0, "success": 0.5}},
        "agentbench": {
            "m<1>": {
                "summary": {
                    "pass_rate": 0.5,
                    "macro_pass_rate": 0.5,
                    "judged": 2,
                    "unjudged": 0,
                    "categories": {"single-server/single-call": {"pass_rate": 0.5, "judged": 2}},
                }
            }
        },
    }


def test_self_contained_and_well_formed():
    records = [call(tool="<b>bold</b>", exposed_name="weather__x"), call(validation={"valid": False, "errors": []})]
    text = render(minimal_report(records), "html")
    parser = Collect()
    parser.feed(text)
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    for name, value in parser.attrs:
        assert name not in ("src", "href"), (name, value)
    assert "@import" not in text and "url(" not in text and "http://" not in text.replace("http://www.w3.org", "")
    assert text.count("<svg") >= 3  # tool validity, server success, pass rates per model and category
    assert "&lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold" not in text  # labels are escaped
    assert "m&lt;1&gt;" in text


def test_tool_chart_is_worst_first_and_capped():
    records = [
        call(tool=f"t{i}", exposed_name=f"s__t{i}", validation={"valid": i % 3 != 0, "errors": []})
        for i in range(MAX_TOOL_BARS + 10)
    ]
    html = render_audit(audit_calls(records), "html")
    labels = re.findall(r'class="label" text-anchor="end">([^<]+)</text>', html)
    assert len(labels) == MAX_TOOL_BARS and labels[0].startswith("weather/t0")  # an invalid one comes first
    assert f"{MAX_TOOL_BARS} of {MAX_TOOL_BARS + 10} tools" in html


def test_chart_primitives():
    svg = charts.hbars([("a", 0.25, "note"), ("b", None, "")], "Title")
    assert svg.startswith("<svg") and "25.0% note" in svg and "no data" in svg
    grouped = charts.grouped(["g1", "g2"], [("s1", [0.5, None]), ("s2", [1.0, 0.0])], "T")
    assert grouped.count("<rect") == 2 + 3  # two legend swatches, three bars (None is skipped)
    assert charts.hbars([], "x") == "" and charts.grouped([], [], "x") == ""


def test_newcomer_wording_unknown_names_one_record_and_an_uncoloured_cross_server_share():
    from mcpgw.evaluator.pipeline import EvalInputs, evaluate

    records = [call(), call(known_tool=False, server=None, tool=None, exposed_name="time__now")]
    audit = render_audit(audit_calls(records), "html")
    assert "1 call to known tools, 1 to unknown names (listed as such)" in audit
    assert "2 calls to known tools<" in render_audit(audit_calls([call(), call()]), "html")
    one = render(minimal_report(records[:1]), "html")
    assert "from 1 call record<" in one or "from 1 call record " in one
    # No run names a model: the report says so, and names the MCP client apart (not as the model).
    report = evaluate(EvalInputs(calls=records[:1], call_log_given=True))
    assert report["models"] == ["unknown (client agent)"]
    # A one-server task has a cross-server share of 0.0%: shown, not marked bad.
    html = render(report, "html")
    cross = re.search(r'<td class="([^"]*)">0\.0%</td>', html)
    assert cross is not None and "bad" not in cross.group(1)
