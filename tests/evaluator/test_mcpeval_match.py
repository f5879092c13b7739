"""MCPEval matching on hand-computed cases, one per quirk in evaluator/METRICS.md."""

import pytest

from mcpgw.evaluator.mcpeval_match import (
    compare_parameters,
    lcs_length,
    match_both,
    match_task,
    match_tasks,
    normalize,
    summarize,
    values_equal,
)


def tc(name, **params):
    return {"tool_name": name, "tool_parameters": params}


def test_normalisation_strips_lowercases_and_floats_recursively():
    assert normalize(" Oslo ") == "oslo"
    assert normalize(True) == 1.0 and normalize(3) == 3.0
    assert normalize({" Key ": [1, " X"], "n": {"B": False}}) == {"key": [1.0, "x"], "n": {"b": 0.0}}
    assert normalize(None) is None


@pytest.mark.parametrize(
    "a, b, strict, flexible",
    [
        (1, 1.0000001, True, True),  # strict tolerance 1e-6
        (1, 1.00001, False, True),
        ("Oslo", " oslo ", True, True),  # strict mode normalises strings too
        (True, 1, True, True),  # booleans are numbers
        ([1.0000001], [1], False, False),  # tolerance is for top-level numbers only
        (0.5, 0.69, False, True),  # |x| < 1: absolute difference < 0.2
        (0.5, 0.71, False, False),
        (0.9, 1.05, False, True),  # either below 1 is enough for the absolute rule
        (100, 119, False, True),  # relative difference 19/119 < 0.2
        (100, 125, False, False),  # 25/125 = 0.2 is not < 0.2
        ("new york", "New York City", False, True),  # flexible: either contains the other
        ("", "anything", False, True),  # ... so the empty string matches everything
        (["a"], ["a", "b"], False, False),  # containment is for top-level strings only
        ("3", 3, False, False),
    ],
)
def test_value_equality(a, b, strict, flexible):
    assert values_equal(a, b) is strict
    assert values_equal(a, b, flexible=True) is flexible


def test_parameter_scores_strict_and_flexible():
    gt = {"a": 1, "b": "x", "c": None}
    pred = {"a": 1, "b": "y"}
    score, mismatches = compare_parameters(gt, pred)
    assert score == pytest.approx(1 / 3) and mismatches == {"b": ("x", "y")}  # missing c is not a mismatch
    score, _ = compare_parameters(gt, pred, flexible=True)
    assert score == pytest.approx(1.5 / 2)  # c (None) is not important; b present but different: 0.5
    assert compare_parameters({}, {"z": 1}) == (1.0, {})
    assert compare_parameters({"x": "", "y": [], "z": {}}, {}, flexible=True)[0] == 1.0
    assert compare_parameters({"x": "", "y": 2}, {}, flexible=False)[0] == 0.0


def test_lcs():
    assert lcs_length(list("abcbdab"), list("bdcaba")) == 4
    assert lcs_length([], ["a"]) == 0


GT = [tc("search", q="Oslo weather"), tc("forecast", city="Oslo", days=3), tc("search", q="Bergen")]
PRED = [
    tc("search", q="oslo weather "),
    tc("forecast", city="oslo", days=3.1),
    tc("summarize", text="x"),
    tc("search", q="bergen"),
]


def test_full_task_strict():
    r = match_task(GT, PRED, mode="strict")
    assert r["tool_name_score"] == pytest.approx(2 / 3)  # position 2: search vs summarize
    assert r["param_match_score"] == pytest.approx(0.75)  # (1 + 1/2) / 2, days 3 vs 3.1 differ
    assert r["order_score"] == 1.0  # LCS 3 / len(GT) 3
    assert r["overall_score"] == pytest.approx(0.4 * 2 / 3 + 0.4 * 0.75 + 0.2)
    assert r["param_matches"] == {"search_0": 1.0, "forecast": 0.5}  # duplicated GT name gets "_i"
    assert r["param_mismatches"] == {"forecast": {"days": (3, 3.1)}}
    assert r["missing_tools"] == [] and r["extra_tools"] == ["summarize"]
    assert r["success"] is False


def test_full_task_flexible():
    r = match_task(GT, PRED, mode="flexible")
    assert r["param_match_score"] == 1.0  # 3 vs 3.1 is within 20%
    assert r["overall_score"] == pytest.approx(0.4 * 2 / 3 + 0.4 + 0.2)
    assert r["success"] is False  # only 2 of 3 names matched position-wise


def test_strict_success_ignores_extra_calls_to_known_names():
    r = match_task([tc("a", x=1)], [tc("a", x=1), tc("a", x=2)])
    assert r["success"] is True and r["extra_tools"] == [] and r["overall_score"] == 1.0
    assert match_task([tc("a", x=1)], [tc("a", x=1), tc("b")])["success"] is False


def test_empty_lists():
    both = match_task([], [])
    assert both["success"] and both["overall_score"] == 1.0 and both["param_match_score"] == 1.0
    only_pred = match_task([], [tc("a")], mode="flexible")
    assert (only_pred["tool_name_score"], only_pred["param_match_score"], only_pred["order_score"]) == (0.0, 0.0, 0.0)
    assert only_pred["success"] is False
    no_pred = match_task([tc("a")], [])
    assert no_pred["missing_tools"] == ["a"] and no_pred["overall_score"] == 0.0


def test_flexible_success_threshold_on_parameters():
    gt = [tc("a", p=1, q=2, r=3)]
    assert match_task(gt, [tc("a", p=1, q=99)], mode="flexible")["success"] is False  # (1 + 0.5 + 0) / 3 = 0.5
    two_of_three = match_task(gt, [tc("a", p=1, q=2)], mode="flexible")
    assert two_of_three["param_match_score"] == pytest.approx(2 / 3) and two_of_three["success"] is True
    assert match_task(gt, [tc("a", p=1, q=2)], mode="strict")["success"] is False
    assert match_task(gt, [tc("a", p=1, q=2)], mode="flexible", thresholds={"flexible_param": 0.7})["success"] is False


def test_weights_are_configurable_and_must_sum_to_one():
    r = match_task(GT, PRED, weights={"name": 1.0, "params": 0.0, "order": 0.0})
    assert r["overall_score"] == pytest.approx(2 / 3) and not r["warnings"]
    partial = match_task(GT, PRED, weights={"name": 0.6, "params": 0.2})  # order keeps its default 0.2
    assert partial["overall_score"] == pytest.approx(0.6 * 2 / 3 + 0.2 * 0.75 + 0.2)
    bad = match_task(GT, PRED, weights={"name": 1.0, "params": 1.0, "order": 1.0})
    assert bad["weights"] == {"name": 0.4, "params": 0.4, "order": 0.2} and bad["warnings"]


def test_both_modes_and_summary():
    one = match_both(GT, PRED)
    two = match_both([tc("a", x=1)], [tc("a", x=1)])
    assert one["strict"]["success"] is False and two["strict"]["success"] is True
    assert one["extra_tools"] == ["summarize"] and one["counts"]["name_only_matches"] == 2
    s = summarize([one, two])
    assert s["total_tasks"] == 2 and s["strict"]["successful_tasks"] == 1 and s["strict"]["success_rate"] == 0.5
    assert s["strict"]["average_score"] == pytest.approx((one["strict"]["overall_score"] + 1.0) / 2)
    assert s["flexible"]["param_match_accuracy"] == pytest.approx(1.0)
    assert summarize([])["strict"]["success_rate"] == 0.0


def test_tasks_are_scored_on_shared_ids_and_the_rest_listed():
    result = match_tasks({"t1": GT, "t2": []}, {"t1": PRED, "t3": []})
    assert list(result["tasks"]) == ["t1"]
    assert result["unpredicted_tasks"] == ["t2"] and result["unknown_predictions"] == ["t3"]
    assert result["summary"]["total_tasks"] == 1


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        match_task([], [], mode="fuzzy")
