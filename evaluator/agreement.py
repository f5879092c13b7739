"""Agreement between a judge and human raters (MCP-AgentBench, appendix D).

Labels are any hashable values (True/False for pass/fail); None means "no
valid judgement" and is left out, as the paper counts only valid judgements.

- percentage agreement: share of items where two label lists agree;
- Cohen's kappa: judge vs the human majority vote, (p_o - p_e) / (1 - p_e);
- Fleiss' kappa: among raters; items with fewer than two valid ratings are
  left out, and items may have different numbers of ratings (the usual
  generalisation: P_i = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1)), p_j over all ratings);
- all-raters agreement: share of items whose valid ratings (two or more) are all equal.

A kappa whose chance agreement is 1 (every label the same) is undefined: None.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

Label = Hashable


def _pairs(first: Sequence[Label | None], second: Sequence[Label | None]) -> list[tuple[Label, Label]]:
    if len(first) != len(second):
        raise ValueError(f"label lists differ in length: {len(first)} and {len(second)}")
    return [(a, b) for a, b in zip(first, second) if a is not None and b is not None]


def percentage_agreement(first: Sequence[Label | None], second: Sequence[Label | None]) -> float | None:
    pairs = _pairs(first, second)
    if not pairs:
        return None
    return sum(1 for a, b in pairs if a == b) / len(pairs)


def cohens_kappa(first: Sequence[Label | None], second: Sequence[Label | None]) -> float | None:
    pairs = _pairs(first, second)
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for a, b in pairs if a == b) / n
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(left[label] * right[label] for label in left) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def majority(ratings: Sequence[Label | None]) -> Label | None:
    """The most common valid rating; a tie (or no rating) gives None."""
    counts = Counter(r for r in ratings if r is not None).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def fleiss_kappa(items: Sequence[Sequence[Label | None]]) -> float | None:
    """items[i] = the ratings of item i, one per rater (None = missing)."""
    per_item = []
    totals: Counter[Label] = Counter()
    for ratings in items:
        valid = [r for r in ratings if r is not None]
        if len(valid) < 2:
            continue
        counts = Counter(valid)
        per_item.append((len(valid), counts))
        totals.update(counts)
    if not per_item:
        return None
    p_bar = sum((sum(c * c for c in counts.values()) - n) / (n * (n - 1)) for n, counts in per_item) / len(per_item)
    all_ratings = sum(totals.values())
    p_e = sum((count / all_ratings) ** 2 for count in totals.values())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def all_raters_agreement(items: Sequence[Sequence[Label | None]]) -> float | None:
    considered = agreed = 0
    for ratings in items:
        valid = [r for r in ratings if r is not None]
        if len(valid) < 2:
            continue
        considered += 1
        agreed += len(set(valid)) == 1
    return agreed / considered if considered else None


def judge_vs_humans(judge: Mapping[str, Label | None], humans: Mapping[str, Sequence[Label | None]]) -> dict[str, Any]:
    """All four statistics for the items both sides labelled; ids on one side only are counted."""
    ids = [item for item in humans if item in judge]
    judge_labels = [judge[item] for item in ids]
    majorities = [majority(humans[item]) for item in ids]
    rater_rows = [list(humans[item]) for item in ids]
    return {
        "items": len(ids),
        "items_without_judge": sum(1 for item in humans if item not in judge),
        "percentage_agreement": percentage_agreement(judge_labels, majorities),
        "cohens_kappa": cohens_kappa(judge_labels, majorities),
        "fleiss_kappa": fleiss_kappa(rater_rows),
        "all_raters_agreement": all_raters_agreement(rater_rows),
        "all_raters_agreement_with_judge": all_raters_agreement(
            [row + [j] for row, j in zip(rater_rows, judge_labels)]
        ),
    }
