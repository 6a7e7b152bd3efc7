"""The shape of a scaling curve (one cell per sweep point): a peak, a rise or a decline is named only when proven.

Seed 002's and 004's question is "does it decline past the peak?" ("drops to about 50% below UP performance at
higher loads"; "peaked at 1000 to 1500 simultaneous sends, and then steadily declined"). Comparing neighbours only
misses a decline made of small steps (93 000 ± 10 000 → 45 000 ± 14 000 req/s over several points was "flat"),
and calls the last point of a rising sweep its "peak". So every pair of points is compared (Welch's t, two-sided),
and Holm's step-down keeps the chance of any false "rise", "decline" or "peak" at 1 − confidence across all those
pairs — the best point is picked from the data, so testing it against the others alone would not. Then:
- the best point's rise is proven when an earlier point is proven worse, its decline when a later one is;
- a peak is named only inside the sweep, with both; a best last point "rises to the end of the sweep";
- when no pair differs the curve is "flat within ±x%": every point lies within x% of the best, CI included.
Simulated on 2000 null curves (6 points × 6 lognormal trials, tests/test_scaling_shape.py): some shape claimed
for 3.0% of them at 95% (Wilson CI 2.3-3.8%); neighbours only, as before issue 25: 19.2%; the best against each
other point with Holm over those alone: 7.0% (the best is chosen from the same data).

Efficiency (speedup ÷ the parameter's ratio) means something only when the parameter counts CPUs or threads
doing the work; for a load sweep (connections, clients, queue depth) "efficiency 2% at 3000 connections" is not a
finding, so it is given for those parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fairmark.stats.describe import describe
from fairmark.stats.paired import two_sided_p
from fairmark.stats.tdist import exact_t

# Sweep parameters that count the CPUs or threads doing the work (speedup ÷ their ratio is an efficiency).
PARALLEL_PARAMETERS = frozenset(
    {"cpus", "online_cpus", "threads", "jobs", "workers", "cores", "nproc", "parallel_jobs", "make_jobs"}
)


def efficiency_applies(parameter: str) -> bool:
    """Whether a sweep over `parameter` has an efficiency (CPU/thread sweeps), not a load sweep."""
    return parameter.lower() in PARALLEL_PARAMETERS


@dataclass(frozen=True)
class CurveShape:
    best: int  # index of the point with the best mean (proven or not)
    peak: int | None  # a proven peak inside the sweep: an earlier and a later point proven worse
    declines_after_peak: bool  # a later point is proven worse than the best
    flat_pct: float | None  # "flat within ±x%" when no two points differ (Holm across all pairs)
    rises_to_best: bool = False  # an earlier point is proven worse than the best
    decline_to: int | None = None  # the worst later point proven worse than the best
    rise_from: int | None = None  # the worst earlier point proven worse than the best
    tied: tuple[int, ...] = ()  # other points not proven worse than the best (where the best might be)
    pairs: int = 0  # pairs of points compared (the Holm family)
    best_is_last: bool = False
    higher: bool = True  # higher is better

    @property
    def rises_to_end(self) -> bool:
        """The best point is the sweep's last and proven better than an earlier one: no peak inside."""
        return self.rises_to_best and self.best_is_last


def _diff(a: Sequence[float], b: Sequence[float], confidence: float) -> tuple[float, float]:
    """(mean_b − mean_a, Welch CI half-width of it); the half-width is 0 without spread, nan below 2 values."""
    sa, sb = describe(a), describe(b)
    if sa.n < 2 or sb.n < 2:
        return sb.mean - sa.mean, math.nan
    va, vb = sa.stddev**2 / sa.n, sb.stddev**2 / sb.n
    if va + vb == 0:
        return sb.mean - sa.mean, 0.0
    df = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    return sb.mean - sa.mean, exact_t(confidence, df) * math.sqrt(va + vb)


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Welch p-value; 0 or 1 for two spread-free samples (different or equal), nan below 2 values."""
    if len(a) < 2 or len(b) < 2:
        return math.nan
    sa, sb = describe(a), describe(b)
    if sa.stddev == 0 and sb.stddev == 0:
        return 1.0 if sa.mean == sb.mean else 0.0

    # scipy.stats.ttest_ind(a, b, equal_var=False), by its formulas (its test compares): no scipy.stats import
    va, vb = sa.stddev**2 / sa.n, sb.stddev**2 / sb.n
    df = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    return two_sided_p((sa.mean - sb.mean) / math.sqrt(va + vb), df)


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down: which hypotheses are rejected with the family-wise error rate held at `alpha` (nan
    counts in the family and is never rejected)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (math.isnan(p_values[i]), p_values[i]))
    rejected = [False] * m
    for rank, i in enumerate(order):
        if math.isnan(p_values[i]) or p_values[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def _proven_worse(
    points: Sequence[Sequence[float]], means: list[float], higher: bool, alpha: float
) -> set[tuple[int, int]]:
    """Pairs (i, j) with i proven worse than j, Holm across all pairs (the best is chosen from the same data)."""
    pairs = [(i, j) for i in range(len(points)) for j in range(i + 1, len(points))]
    rejected = holm([welch_p(points[i], points[j]) for i, j in pairs], alpha)
    worse: set[tuple[int, int]] = set()
    for (i, j), r in zip(pairs, rejected, strict=True):
        if r:
            lower, upper = (i, j) if means[i] < means[j] else (j, i)
            worse.add((lower, upper) if higher else (upper, lower))
    return worse


def _flat_pct(
    points: Sequence[Sequence[float]], best: int, means: list[float], confidence: float
) -> float | None:
    if not means[best]:
        return None
    widths = []
    for i in range(len(points)):
        d, e = _diff(points[best], points[i], confidence)
        widths.append(100.0 * (abs(d) + (e if math.isfinite(e) else math.inf)) / abs(means[best]))
    return max(widths)


def curve_shape(points: Sequence[Sequence[float]], *, higher: bool, confidence: float = 95.0) -> CurveShape:
    """The shape of a curve given each point's values (in sweep order)."""
    means = [describe(v).mean for v in points]
    k = len(points)
    best = max(range(k), key=lambda i: means[i] if higher else -means[i])
    worse = _proven_worse(points, means, higher, 1.0 - confidence / 100.0)
    below = [i for i in range(k) if (i, best) in worse]  # proven worse than the best

    def worst(idx: list[int]) -> int | None:
        return min(idx, key=lambda i: means[i] if higher else -means[i]) if idx else None

    rise_from = worst([i for i in below if i < best])
    decline_to = worst([i for i in below if i > best])
    peak = best if rise_from is not None and decline_to is not None else None
    return CurveShape(
        best=best,
        peak=peak,
        declines_after_peak=decline_to is not None,
        flat_pct=None if worse else _flat_pct(points, best, means, confidence),
        rises_to_best=rise_from is not None,
        decline_to=decline_to,
        rise_from=rise_from,
        tied=tuple(i for i in range(k) if i != best and i not in below),
        pairs=k * (k - 1) // 2,
        best_is_last=best == k - 1,
        higher=higher,
    )
