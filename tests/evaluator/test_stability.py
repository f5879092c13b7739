"""Issue 53 item 2: the statistics of repeated runs, against numbers worked out by hand or by brute force."""

from __future__ import annotations

import itertools
import math

import pytest

from mcpgw.evaluator import compare, repeats, stability


def brute_force(outcomes: list[bool], k: int) -> tuple[float, float]:
    """pass@k and pass^k as their definitions say: over every k-subset of the n repeats, the share with at
    least one success, and the share with only successes."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_every_subset(n):
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            at_k, hat_k = brute_force(outcomes, k)
            assert stability.pass_at_k(n, c, k) == pytest.approx(at_k)
            assert stability.pass_hat_k(n, c, k) == pytest.approx(hat_k)


def test_impossible_counts_are_refused():
    with pytest.raises(ValueError):
        stability.pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        stability.pass_hat_k(3, 1, 4)


def test_sample_standard_deviation():
    assert stability.stdev([1.0, 0.0, 1.0, 0.0]) == pytest.approx(math.sqrt(1 / 3))  # n - 1 in the denominator
    assert stability.stdev([0.7]) is None  # one repeat: no spread to estimate


def test_bootstrap_interval_holds_the_mean_narrows_with_more_tasks_and_repeats_with_its_seed():
    few = [1.0, 0.0, 1.0, 1.0, 0.0, 0.5, 0.25, 1.0, 0.0, 0.75]
    many = few * 10  # the same spread over ten times the tasks
    low, high = stability.bootstrap_ci(few, level=0.95, resamples=2000, seed=7)
    assert low < stability.mean(few) < high
    low_many, high_many = stability.bootstrap_ci(many, level=0.95, resamples=2000, seed=7)
    assert low_many < stability.mean(many) < high_many
    assert high_many - low_many < (high - low) / 2  # about 1/sqrt(10) as wide
    assert stability.bootstrap_ci(few, seed=7) == stability.bootstrap_ci(few, seed=7)
    assert stability.bootstrap_ci(few, level=0.5, seed=7)[1] - stability.bootstrap_ci(few, level=0.5, seed=7)[0] < (
        high - low
    )


def test_quantile_interpolates_between_ranks():
    assert stability.quantile([0.0, 1.0, 2.0, 3.0], 0.5) == 1.5
    assert stability.quantile([0.0, 1.0, 2.0, 3.0], 0.0) == 0.0
    assert stability.quantile([5.0], 0.975) == 5.0


def section(outcomes_by_task: dict[str, list[bool]], model: str = "m") -> dict:
    groups, outcomes = {}, {}
    for task, values in outcomes_by_task.items():
        runs = [f"s/{task}#{i}" for i in range(len(values))]
        groups[(model, task)] = runs
        for run, value in zip(runs, values, strict=True):
            outcomes[run] = {"ok": value}
    return repeats.stability_section(groups, {}, outcomes, resamples=500)


def test_flip_share_pass_at_k_and_pass_hat_k_over_tasks_by_hand():
    data = section({"a": [True] * 3, "b": [True, False, True], "c": [False] * 3, "d": [False, True, False]})
    tasks = data["models"]["m"]["tasks"]
    assert tasks["b"]["outcomes"]["ok"]["successes"] == 2 and tasks["b"]["outcomes"]["ok"]["flips"]
    assert not tasks["a"]["outcomes"]["ok"]["flips"]
    agg = data["models"]["m"]["aggregates"]
    assert agg["ok flip share"]["value"] == pytest.approx(0.5)  # b and d flip, a and c do not
    assert agg["ok rate"]["value"] == pytest.approx((1 + 2 / 3 + 0 + 1 / 3) / 4)
    # pass^2 per task: C(3,2)/C(3,2)=1, C(2,2)/C(3,2)=1/3, 0, C(1,2)=0 -> 0
    assert agg["ok pass^2"]["value"] == pytest.approx((1 + 1 / 3) / 4)
    # pass@2 per task: 1, 1 - C(1,2)/3 = 1, 1 - C(3,2)/3 = 0, 1 - C(2,2)/3 = 2/3
    assert agg["ok pass@2"]["value"] == pytest.approx((1 + 1 + 0 + 2 / 3) / 4)
    assert list(agg).index("ok pass@3") < list(agg).index("ok pass^1")  # k sorts as a number
    for row in agg.values():
        assert row["low"] <= row["value"] <= row["high"]


def test_repeats_are_grouped_by_model_and_task():
    task_of = {"s/t1#0": "s/t1#0", "s/t1#10": "s/t1#10", "s/t1#2": "s/t1#2", "r9": "t1", "r8": "t1", "x#1": "x#1"}
    model_of = {"s/t1#0": "m", "s/t1#10": "m", "s/t1#2": "m", "r9": "m", "r8": "n", "x#1": "m"}
    groups = repeats.group_runs(task_of, model_of)
    assert groups[("m", "s/t1")] == ["s/t1#0", "s/t1#2", "s/t1#10"]  # repeat order, as numbers
    assert groups[("m", "t1")] == ["r9"] and groups[("n", "t1")] == ["r8"]  # the answers' task, per model
    assert groups[("m", "x")] == ["x#1"]


def test_success_rule_parses_and_applies():
    rule = repeats.parse_success(" mcpbench.execution_success_rate >= 0.9 ")
    assert rule.name == "mcpbench.execution_success_rate>=0.9"
    assert rule.passed(0.9) and not rule.passed(0.89)
    assert repeats.parse_success("x<1").passed(0.5)
    with pytest.raises(ValueError, match="METRIC>=X"):
        repeats.parse_success("score is high")


def test_compare_calls_a_real_gap_above_the_noise_and_no_gap_not():
    weak = section({f"t{i}": [i % 3 == 0, False, False, False] for i in range(30)})
    strong = section({f"t{i}": [True, True, i % 5 != 0, True] for i in range(30)})
    same = compare.compare(weak, weak, level=0.95, resamples=500, seed=0, names=("a", "b"))
    assert same["aggregates"]["ok rate"]["difference"] == 0 and not same["aggregates"]["ok rate"]["above_noise"]
    gap = compare.compare(weak, strong, level=0.95, resamples=500, seed=0, names=("a", "b"))
    row = gap["aggregates"]["ok rate"]
    assert row["above_noise"] and row["low"] > 0 and row["y_ahead"] == 30
    assert gap["test"].startswith("paired bootstrap")


def test_compare_needs_shared_tasks_and_one_model_a_side():
    with pytest.raises(ValueError, match="no task in common"):
        compare.compare(
            section({"a": [True]}), section({"b": [True]}), level=0.95, resamples=10, seed=0, names=("x", "y")
        )
    two = repeats.stability_section(
        {("m", "a"): ["r1"], ("n", "a"): ["r2"]}, {}, {"r1": {"ok": True}, "r2": {"ok": True}}
    )
    with pytest.raises(ValueError, match="2 models"):
        compare.compare(two, two, level=0.95, resamples=10, seed=0, names=("x", "y"))


def test_noise_splits_the_spread_between_environment_and_model_by_hand():
    from mcpgw.evaluator import noise

    live = section({"a": [True, False, True, False], "b": [True] * 4})
    frozen = section({"a": [True, True, False, True], "b": [False] * 4})
    calls = [  # task a's live repeats: one call made in three repeats, answered two ways; one made once
        {"run_id": "s/a#0", "server": "u", "exposed_name": "u__now", "arguments": {}, "result_digest": "d1"},
        {"run_id": "s/a#1", "server": "u", "exposed_name": "u__now", "arguments": {}, "result_digest": "d2"},
        {"run_id": "s/a#2", "server": "u", "exposed_name": "u__now", "arguments": {}, "result_digest": "d1"},
        {"run_id": "s/a#2", "server": "u", "exposed_name": "u__add", "arguments": {"x": 1}, "result_digest": "d3"},
        {"run_id": "s/a#3", "server": "@model", "exposed_name": "m", "arguments": {}, "result_digest": "z"},
    ]
    data = noise.noise(live, frozen, calls, level=0.95, resamples=300, seed=0, names=("live", "frozen"))
    row = data["metrics"]["ok"]
    # variance per task (n - 1): live a [1,0,1,0] 1/3, b 0; frozen a [1,1,0,1] 1/4, b 0
    assert row["live_variance"] == pytest.approx(1 / 6) and row["frozen_variance"] == pytest.approx(1 / 8)
    assert row["environment_share"] == pytest.approx(0.25)
    assert row["low"] - 1e-9 <= 0.25 <= row["high"] + 1e-9  # every draw with task a gives 0.25
    assert data["tasks"]["a"] == {"repeated_calls": 1, "differed": 1, "examples": ["u__now({})"], "frozen_differed": 0}
    assert data["tasks"]["b"]["repeated_calls"] == 0
    still = section({"a": [True] * 4})
    assert (
        noise.noise(still, still, [], level=0.95, resamples=10, seed=0, names=("x", "y"))["metrics"]["ok"][
            "environment_share"
        ]
        is None
    )  # no live spread: nothing to attribute


def test_per_run_values_take_the_judges_numbers_and_verdicts():
    report = {
        "mcpbench_judge": {"m": {"runs": {"r#1": {"axes": {"planning": 6.0, "grounding": None}, "overall": 7.5}}}},
        "agentbench": {"m": {"runs": {"r#1": {"passed": True}, "r#2": {"passed": None}}}},
    }
    numbers, outcomes = repeats.run_values(report, {}, {"r#1": "r", "r#2": "r"}, {})
    assert numbers == {"r#1": {"judge.mcpbench.planning": 6.0, "judge.mcpbench.overall": 7.5}}
    assert outcomes == {"r#1": {"judge.passed": True}}  # an unjudged run is no outcome, not a failure
    rule = repeats.parse_success("judge.mcpbench.overall>=7")
    section = repeats.stability_section({("m", "r"): ["r#1"]}, numbers, outcomes, rules=[rule], resamples=10)
    assert section["models"]["m"]["tasks"]["r"]["outcomes"]["judge.mcpbench.overall>=7"]["values"] == [True]


def test_intervals_of_several_aggregates_at_once_are_each_ones_alone():
    rng = __import__("random").Random(3)
    columns = {name: [rng.random() for _ in range(17)] for name in ("a", "b", "c")}
    together = stability.bootstrap_means(columns, level=0.9, resamples=200, seed=5)
    for name, values in columns.items():
        assert together[name] == stability.bootstrap_ci(values, level=0.9, resamples=200, seed=5)
