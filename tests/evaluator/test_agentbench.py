import pytest

from mcpgw.evaluator.agentbench import CATEGORIES, normalize_category, pass_rates


@pytest.mark.parametrize(
    "label, expected",
    [
        ("Single-Server-Single-Call", "single-server/single-call"),
        ("multi_server_sequential_call", "multi-server/sequential-call"),
        ("Multi Server Parallel", "multi-server/parallel-call"),
        ("ms-pc", "multi-server/parallel-call"),
        ("something else", "something else"),
        (None, None),
    ],
)
def test_category_names(label, expected):
    assert normalize_category(label) == expected


def test_pass_rates_overall_per_category_and_unjudged():
    verdicts = (
        [("Single-Server-Single-Call", True)] * 3
        + [("single_server_single_call", False)]
        + [("Multi-Server-Sequential-Call", True), ("Multi-Server-Sequential-Call", None)]
        + [("odd", False)]
    )
    result = pass_rates(verdicts)
    assert (result["queries"], result["judged"], result["unjudged"], result["passed"]) == (7, 6, 1, 4)
    assert result["pass_rate"] == pytest.approx(4 / 6)
    cats = result["categories"]
    assert cats["single-server/single-call"]["pass_rate"] == 0.75
    assert cats["multi-server/sequential-call"]["pass_rate"] == 1.0
    assert cats["multi-server/sequential-call"]["unjudged"] == 1
    assert cats["odd"]["pass_rate"] == 0.0
    # the paper's Avg.: mean of the known categories' rates (the odd label is not one of the six)
    assert result["macro_pass_rate"] == pytest.approx((0.75 + 1.0) / 2)
    assert list(cats)[:2] == [c for c in CATEGORIES if c in cats]  # canonical order first


def test_nothing_judged():
    result = pass_rates([("single-server/single-call", None)])
    assert result["pass_rate"] is None and result["macro_pass_rate"] is None
