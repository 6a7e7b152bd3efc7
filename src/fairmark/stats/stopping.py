"""Adaptive stopping by precision: stop a cell when the CI of its mean is narrow enough — never because an A/B
test turned significant (re-running until significant manufactures results)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fairmark.stats.describe import describe
from fairmark.stats.tdist import t_quantile

MIN_TRIALS = 3  # ministat's floor: no CI is trusted below it


def precision_reached(values: Sequence[float], *, confidence: float, target_ci_pct: float) -> bool:
    """True when n ≥ 3 and the CI half-width is ≤ target_ci_pct % of |mean|."""
    if len(values) < MIN_TRIALS:
        return False
    s = describe(values, confidence)
    if s.mean == 0:
        return s.stddev == 0
    return bool(s.ci_half_width <= target_ci_pct / 100.0 * abs(s.mean))


def ideal_n(values: Sequence[float], *, confidence: float, target_ci_pct: float) -> int:
    """Trials needed for the target precision at the CV seen so far: n = (t·cv/p)², t for df = n − 1.

    Iterated because t depends on n. It is an estimate from the spread seen so far (it can be below the
    current n when precision is already reached). With fewer than 2 values or a zero mean there is no
    estimate: the current n (at least 3) is returned, so the display shows no guess rather than a wrong one.
    """
    n_now = len(values)
    if n_now < 2:
        return max(n_now, MIN_TRIALS)
    s = describe(values, confidence)
    if not math.isfinite(s.cv) or target_ci_pct <= 0:
        return n_now
    if s.cv == 0:
        return max(n_now, MIN_TRIALS)
    p = target_ci_pct / 100.0
    n = max(n_now, MIN_TRIALS)
    for _ in range(50):  # fixed point of n = (t(n−1)·cv/p)²; converges in a few steps
        new = max(MIN_TRIALS, math.ceil((t_quantile(confidence, n - 1) * s.cv / p) ** 2))
        if new == n:
            break
        n = new
    return max(n, MIN_TRIALS)
