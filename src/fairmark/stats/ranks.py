"""Mann-Whitney U with its exact permutation p-value, ties included (like benchstat), and the smallest p the
sample sizes can reach: at n = 3 + 3 no arrangement gives p < 0.1, so a "disagreement" there means nothing.

The exact null distribution of the rank sum is counted by dynamic programming over the mid-ranks (doubled, so
they are integers); scipy's normal approximation with ties understates p by up to 2× at small n. Above
EXACT_MAX_N values in all the approximation is good and the counting too slow, so scipy's is used.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EXACT_MAX_N = 80


def _rank_sum_distribution(doubled_ranks: np.ndarray, k: int) -> np.ndarray:
    """counts[s] = number of k-subsets of the (doubled, integer) ranks whose sum is s."""
    total = int(doubled_ranks.sum())
    counts = np.zeros((k + 1, total + 1))
    counts[0, 0] = 1.0
    for r in doubled_ranks.astype(int):
        counts[1:, r:] += counts[:-1, : total + 1 - r].copy()
    return counts[k]


def exact_mann_whitney(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Two-sided exact permutation test of the rank sum of `b` (U counts pairs where b > a, ties half).
    Returns u, p_value and min_p (the smallest p any arrangement of these values could give)."""
    from scipy import stats  # heavy import, only when a comparison is made

    x = np.concatenate([a, b])
    n, k = x.size, b.size
    u = float(stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic").statistic)
    if n > EXACT_MAX_N:
        res = stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic")
        return {"u": u, "p_value": float(res.pvalue), "min_p": 0.0, "exact": False}
    doubled = np.rint(2 * stats.rankdata(x)).astype(int)
    dist = _rank_sum_distribution(doubled, k)
    prob = dist / dist.sum()
    sums = np.arange(dist.size)
    mean = k * (n + 1)  # doubled expected rank sum
    dev = np.abs(sums - mean)
    observed = abs(int(doubled[a.size :].sum()) - mean)
    p = float(prob[dev >= observed - 1e-9].sum())
    extreme = dev[prob > 0].max()
    min_p = float(prob[dev >= extreme].sum())
    return {"u": u, "p_value": min(1.0, p), "min_p": min(1.0, min_p), "exact": True}


def can_reach(result: dict[str, Any], alpha: float) -> bool:
    """Whether the rank test could have found a difference at `alpha` with these sample sizes and ties."""
    return bool(result.get("min_p", 0.0) < alpha) and not math.isnan(alpha)


def signed_rank(d: np.ndarray) -> dict[str, Any]:
    """Wilcoxon's signed-rank test of paired differences (scipy: exact without ties up to 50 pairs) and the
    smallest p its number of non-zero differences can reach (2/2^m)."""
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return {"p_value": 1.0, "min_p": 1.0}
    from scipy import stats

    p = float(stats.wilcoxon(nonzero, method="auto").pvalue)
    return {"p_value": p, "min_p": min(1.0, 2.0 ** (1 - nonzero.size))}
