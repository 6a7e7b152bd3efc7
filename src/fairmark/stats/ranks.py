"""Rank tests, exact where it matters and fast with ties: Mann-Whitney U for two samples and Wilcoxon's signed
rank for pairs, each with the smallest p its sample sizes can reach (at n = 3 + 3 no arrangement gives
p < 0.1, so a "disagreement" there means nothing).

Both exact null distributions are counted by dynamic programming over the mid-ranks (doubled, so they are
integers): ties are handled exactly and a few hundred values take milliseconds (scipy's signed-rank test falls
back to a permutation null with ties: 2–5 s per verdict). Above the exact limits the normal approximation with
the tie correction is used. Only numpy and the standard library (no scipy import).
"""

from __future__ import annotations

import math
from typing import NotRequired, TypedDict

import numpy as np

from fairmark.stats.arrays import Floats


class RankTest(TypedDict):
    """A rank test's outcome: its p and the smallest p any arrangement of these values could give."""

    p_value: float
    min_p: float


class MannWhitney(RankTest):
    u: float  # pairs where b > a, ties half
    exact: bool  # the exact permutation p (else the normal approximation)


class RankCheck(TypedDict):
    """The rank test that cross-checks a verdict (Comparison.mann_whitney): Mann-Whitney U, or Wilcoxon's signed
    rank on the pairs (no U), and whether it finds a difference at the comparison's level."""

    test: str
    u: float | None
    p_value: float
    min_p: float
    exact: NotRequired[bool]
    significant: bool


EXACT_MAX_N = 80  # Mann-Whitney: values in all
EXACT_MAX_PAIRS = 200  # signed rank: non-zero differences


def midranks(x: Floats) -> Floats:
    """Ranks 1…n, ties sharing their mean rank (scipy.stats.rankdata's 'average')."""
    order = np.argsort(x, kind="mergesort")
    _, inverse, counts = np.unique(x[order], return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    mean_rank = ends - (counts - 1) / 2.0
    ranks = np.empty(x.size)
    ranks[order] = mean_rank[inverse]
    return ranks


def _tie_term(x: Floats) -> float:
    _, counts = np.unique(x, return_counts=True)
    return float(np.sum(counts**3 - counts))


def _normal_p(z: float) -> float:
    # the normal tail by erfc, as scipy.special.ndtr computes it: `show` and `history` load no scipy for it
    return min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))


def _rank_sum_distribution(doubled_ranks: Floats, k: int) -> Floats:
    """counts[s] = number of k-subsets of the (doubled, integer) ranks whose sum is s."""
    total = int(doubled_ranks.sum())
    counts = np.zeros((k + 1, total + 1))
    counts[0, 0] = 1.0
    for r in doubled_ranks.astype(int):
        counts[1:, r:] += counts[:-1, : total + 1 - r].copy()
    row: Floats = counts[k]
    return row


def _large_rank_sum(a: Floats, b: Floats) -> tuple[float, float]:
    """U of `b` and the tie term, from the sorted samples alone: U counts, for each value of b, the values of a
    below it and half those equal to it — where it would go into a's sorted values, from the left and from the
    right (integers: the halves add exactly). Two files of 100 000 values: 3 MB at most, where the ranks of every
    value and their inverse permutation took 17; neither is merged into the other unless they share a value."""
    a, b = np.sort(a), np.sort(b)  # sorted, the searches walk memory in order (3× faster)
    left = np.searchsorted(a, b, "left")
    shared = a[np.minimum(left, a.size - 1)] == b  # b's values found in a (a value past a's end is not)
    if not shared.any():  # continuous values: from the right is from the left; ties lie within each sample
        return float(int(left.sum())), float(_tie_sum(a) + _tie_sum(b))
    u = float(int(left.sum()) + int(np.searchsorted(a, b, "right").sum())) / 2.0
    x = np.concatenate([a, b])
    x.sort()
    return u, float(_tie_sum(x))


def _tie_sum(x: Floats) -> int:
    """Σ (t³ − t) over the runs of t equal values of the sorted `x`."""
    same = x[1:] == x[:-1]
    if not same.any():  # no ties (continuous values)
        return 0
    edges = np.flatnonzero(~same) + 1
    counts = np.diff(np.concatenate([[0], edges, [x.size]]))
    return int(np.sum(counts**3 - counts))


def exact_mann_whitney(a: Floats, b: Floats) -> MannWhitney:
    """Two-sided test of the rank sum of `b` (U counts pairs where b > a, ties half): exact permutation p up to
    EXACT_MAX_N values, the normal approximation with the tie correction above. Returns u, p_value and min_p
    (the smallest p any arrangement of these values could give)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n, k = a.size + b.size, b.size
    if n > EXACT_MAX_N:
        u, ties = _large_rank_sum(a, b)
        mu = a.size * k / 2.0
        var = a.size * k / 12.0 * ((n + 1) - ties / (n * (n - 1)))
        p = _normal_p((u - mu) / math.sqrt(var)) if var > 0 else 1.0
        return {"u": u, "p_value": p, "min_p": 0.0, "exact": False}
    x = np.concatenate([a, b])
    ranks = midranks(x)
    u = float(ranks[a.size :].sum() - k * (k + 1) / 2.0)
    doubled = np.rint(2 * ranks).astype(int)
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


def can_reach(result: RankTest | RankCheck, alpha: float) -> bool:
    """Whether the rank test could have found a difference at `alpha` with these sample sizes and ties."""
    return bool(result["min_p"] < alpha) and not math.isnan(alpha)


def signed_rank(d: Floats) -> RankTest:
    """Wilcoxon's signed-rank test of paired differences (zeros dropped, ties at their mid-ranks): exact up
    to EXACT_MAX_PAIRS non-zero differences, normal with the tie correction above; and the smallest p the
    number of non-zero differences can reach (2/2^m)."""
    d = np.asarray(d, dtype=float)
    nonzero = d[d != 0]
    m = nonzero.size
    if m == 0:
        return {"p_value": 1.0, "min_p": 1.0}
    ranks = midranks(np.abs(nonzero))
    min_p = min(1.0, 2.0 ** (1 - m))
    if m > EXACT_MAX_PAIRS:
        w = float(ranks[nonzero > 0].sum())
        mu = m * (m + 1) / 4.0
        var = m * (m + 1) * (2 * m + 1) / 24.0 - _tie_term(np.abs(nonzero)) / 48.0
        return {"p_value": _normal_p((w - mu) / math.sqrt(var)) if var > 0 else 1.0, "min_p": min_p}
    doubled = np.rint(2 * ranks).astype(int)
    total = int(doubled.sum())
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for r in doubled:  # each rank is in the positive sum or not, with probability ½ each under the null
        counts[r:] += counts[: total + 1 - r].copy()
    prob = counts / counts.sum()
    dev = np.abs(np.arange(total + 1) - total / 2.0)
    observed = abs(float(doubled[nonzero > 0].sum()) - total / 2.0)
    return {"p_value": min(1.0, float(prob[dev >= observed - 1e-9].sum())), "min_p": min_p}
