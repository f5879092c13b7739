"""Run-to-run statistics of repeated tasks: spread, pass@k and pass^k, flips, bootstrap intervals.

Plain Python (no numpy): every interval comes from a `random.Random(seed)` of its own, so the same
input gives the same numbers, and one aggregate's interval does not depend on which others were asked
for. The formulas are written out in evaluator/METRICS.md ("Repeats and stability").
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

DEFAULT_CI = 0.95
DEFAULT_BOOTSTRAP = 1000
DEFAULT_SEED = 0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def stdev(values: Sequence[float]) -> float | None:
    """The sample standard deviation (n - 1); None for a single value (no spread to estimate)."""
    if len(values) < 2:
        return None
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of P(at least one of k draws succeeds): 1 - C(n-c, k) / C(n, k)."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k, P(all of k draws succeed): C(c, k) / C(n, k)."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


def flips(outcomes: Sequence[bool]) -> bool:
    """A task flips when its repeats do not all agree."""
    return len(set(outcomes)) > 1


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the two nearest ranks (the usual 'type 7' quantile)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bootstrap_ci(
    values: Sequence[float],
    *,
    level: float = DEFAULT_CI,
    resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean over tasks: draw len(values) tasks with
    replacement, `resamples` times; the interval holds the middle `level` of the means."""
    return bootstrap_statistic(values, mean, level=level, resamples=resamples, seed=seed)


def bootstrap_statistic(
    items: Sequence[T],
    statistic: Callable[[Sequence[T]], float | None],
    *,
    level: float = DEFAULT_CI,
    resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """The same for any statistic of the tasks' items (e.g. a ratio of two means: one item per task). A draw
    whose statistic is undefined (None: a ratio over a draw whose denominator is 0) is left out."""
    if not items:
        raise ValueError("no tasks to resample")
    rng = random.Random(seed)
    n = len(items)
    drawn = (statistic(rng.choices(items, k=n)) for _ in range(resamples))  # choices: 2-3x randrange's speed
    stats = sorted(s for s in drawn if s is not None)
    if not stats:
        raise ValueError("the statistic is undefined in every resample")
    tail = (1.0 - level) / 2
    return quantile(stats, tail), quantile(stats, 1.0 - tail)


def bootstrap_means(
    columns: Mapping[str, Sequence[float]], *, level: float, resamples: int, seed: int
) -> dict[str, tuple[float, float]]:
    """`bootstrap_ci` of several aggregates over the same tasks (columns of one length, a value per task), at
    once: each draw of tasks is made once and serves every column. The numbers are those `bootstrap_ci` gives
    each column alone (the same seed draws the same tasks); it is the draws, not the sums, that cost."""
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise ValueError("columns over different tasks: bootstrap them apart")
    if not columns:
        return {}
    (n,) = lengths
    if n == 0:
        raise ValueError("no tasks to resample")
    rng = random.Random(seed)
    tasks = range(n)
    means: dict[str, list[float]] = {name: [] for name in columns}
    for _ in range(resamples):
        drawn = rng.choices(tasks, k=n)
        for name, values in columns.items():
            means[name].append(sum(map(values.__getitem__, drawn)) / n)
    tail = (1.0 - level) / 2
    out = {}
    for name, stats in means.items():
        stats.sort()
        out[name] = (quantile(stats, tail), quantile(stats, 1.0 - tail))
    return out


def interval(values: Sequence[float], level: float, resamples: int, seed: int) -> dict[str, float | int]:
    """An aggregate over tasks (the mean of one number per task) with its bootstrap interval."""
    low, high = bootstrap_ci(values, level=level, resamples=resamples, seed=seed)
    return {"value": mean(values), "low": low, "high": high, "tasks": len(values)}


def check_options(level: float, resamples: int) -> None:
    if not 0 < level < 1:
        raise ValueError(f"--ci: a confidence level between 0 and 1 (0.95 = 95%), got {level:g}")
    if resamples < 1:
        raise ValueError(f"--bootstrap: a number of resamples, 1 or more, got {resamples}")
