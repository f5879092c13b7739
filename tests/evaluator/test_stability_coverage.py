"""Issue 53 item 2, checked against the truth: repeats drawn from known success probabilities (each task's
drawn from 0.2 / 0.5 / 0.9), K = 10 repeats. Over many seeds the bootstrap interval of pass@k and pass^k
holds the closed form about as often as its level says, and `--compare` of two equally good models calls a
difference "above the noise" about as rarely as the level allows, while a real gap is found."""

from __future__ import annotations

import random

from mcpgw.evaluator import compare, repeats

PROBABILITIES = (0.2, 0.5, 0.9)
TASKS, K, SEEDS, RESAMPLES = 30, 10, 120, 300


def draw(rng: random.Random, chances: list[float], k: int = K, resamples: int = RESAMPLES) -> dict:
    groups, outcomes = {}, {}
    for t, p in enumerate(chances):
        runs = [f"s/t{t}#{i}" for i in range(k)]
        groups[("m", f"t{t}")] = runs
        for run in runs:
            outcomes[run] = {"ok": rng.random() < p}
    return repeats.stability_section(groups, {}, outcomes, resamples=resamples, seed=rng.randrange(1 << 30))


def test_intervals_hold_the_closed_form_about_as_often_as_their_level_says():
    inside = {"pass@1": 0, "pass@3": 0, "pass^3": 0, "pass^10": 0}
    truth = {
        "pass@1": sum(PROBABILITIES) / 3,
        "pass@3": sum(1 - (1 - p) ** 3 for p in PROBABILITIES) / 3,
        "pass^3": sum(p**3 for p in PROBABILITIES) / 3,
        "pass^10": sum(p**10 for p in PROBABILITIES) / 3,
    }
    for seed in range(SEEDS):
        rng = random.Random(seed)
        chances = [rng.choice(PROBABILITIES) for _ in range(TASKS)]
        aggregates = draw(rng, chances)["models"]["m"]["aggregates"]
        for name in inside:
            row = aggregates[f"ok {name}"]
            inside[name] += row["low"] <= truth[name] <= row["high"]
    for name, hits in inside.items():
        # Nominal 0.95. The percentile bootstrap over 30 tasks runs a little short, most for pass^K at k = K,
        # whose per-task value is 0 or 1 nearly always (a skewed mean): 0.88 there, 0.92-0.95 elsewhere (these seeds).
        assert (0.78 if name == "pass^10" else 0.88) <= hits / SEEDS <= 0.995, (
            name,
            hits / SEEDS,
        )  # nominal 0.95; 30 tasks, percentile bootstrap


def test_compare_says_above_the_noise_about_as_rarely_as_the_level_allows_and_finds_a_real_gap():
    false_alarms, found, rounds = 0, 0, 100
    for seed in range(rounds):
        rng = random.Random(5000 + seed)
        chances = [rng.choice(PROBABILITIES) for _ in range(TASKS)]
        # Four repeats, and no intervals of their own to spend time on: the comparison's are what is checked.
        a, b = draw(rng, chances, 4, 1), draw(rng, chances, 4, 1)  # the same model twice
        same = compare.compare(a, b, level=0.95, resamples=RESAMPLES, seed=seed, names=("a", "b"))
        false_alarms += same["aggregates"]["ok rate"]["above_noise"]
        if seed < 20:  # a model better by 0.3 on every task
            better = draw(rng, [min(1.0, p + 0.3) for p in chances], 4, 1)
            gap = compare.compare(a, better, level=0.95, resamples=RESAMPLES, seed=seed, names=("a", "better"))
            found += gap["aggregates"]["ok rate"]["above_noise"]
    # Nominal 0.05 (over 300 seeds: 0.063); 100 seeds give one binomial draw of it.
    assert false_alarms / rounds <= 0.11, false_alarms
    assert found == 20, found
