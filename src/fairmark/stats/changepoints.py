"""Change points in a performance history: e-divisive means with a permutation test (Matteson & James 2014),
made to hold its level when consecutive runs are correlated.

The method the field uses for performance histories (MongoDB's `signal-processing-algorithms`, Apache Otava):
hierarchical splitting by the energy statistic, each split kept only when it is significant at `alpha`;
splitting stops at the first split that is not, so the chance of any false change point in a series with none
is at most `alpha` — **when the runs are independent**. A permutation test assumes exchangeable points; a
machine that drifts from run to run (lag-1 autocorrelation φ of the run means) makes a slow wander look like a
step: with plain permutations 5.6% false alarms at φ 0.3 and 22% at φ 0.6 (α 0.01, 20 points).

So each split must also pass a test against autocorrelated noise: the split's statistic divided by the spread
of the points around the two segments' means (a pivot: no variance to estimate), against the same pivot of
simulated AR(1) series with φ set high — the lag-1 autocorrelation of those residuals, corrected for its bias
at small n and for the two fitted means, plus 1.5 standard errors (a short series cannot tell φ 0.3 from 0.6,
and a φ estimated low lets a drift pass for a step). The split's p-value is the larger of the two. Block
permutations were tried first and held only 13% at φ 0.6.

A short series (at most EXACT_MAX points) gets the exact permutation p-value instead of a sampled one: with 199
random permutations a clean +16% step in 10 runs was reported as no change point at α 0.01: its exact p is
2/C(10,5) = 0.0079, and the sampled p (1 + exceeding)/200 lands above 0.01 as soon as two of the 199 exceed. The permutations are counted, not
listed: the statistic of a split depends only on the set of points before it, so a dynamic programme over the
2^n subsets counts the orderings whose every split stays below the observed statistic. `min_p_value(n)` is the
smallest p any series of n points can reach; a series too short for α cannot show a change point at all. Written on numpy (both libraries pin numpy and scipy
versions fairmark cannot share; the README's design section says so). Distances use exponent 1 (the default of
both).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairmark.stats.arrays import Floats

CHUNK_FLOATS = 4_000_000  # per batch of permutations (32 MB of float64)
BATCH = 20  # permutations per batch at most, so that a hopeless split stops early
MIN_SIZE = 3  # each side of a split has at least this many points (a mean of 2 says little)
EXACT_MAX = 14  # series up to this length get the exact permutation p-value (2^14 subsets, ~0.06 s)
AR_SIMULATIONS_SHORT = 999  # AR(1) series simulated for a short series' robust test (its smallest p is 0.001)


PHI_MARGIN = 1.5  # standard errors above the estimated lag-1 autocorrelation at which the AR(1) null is drawn
PHI_MAX = 0.95
BURN_IN = 30


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first point of the new segment
    p_value: float  # the larger of the permutation test's and the autocorrelation-robust test's
    statistic: float
    phi: float = 0.0  # the lag-1 autocorrelation the robust test allowed for


def _q_stats(x: Floats) -> Floats:
    """The energy statistic Q(τ) for every split τ of each row of x (shape (R, n)) → (R, n - 2·MIN_SIZE + 1).

    From the distance matrix's row sums below and above the diagonal: the within-sum of the first τ points is a
    cumulative sum of the lower row sums, that of the last n − τ points one of the upper row sums from the end,
    and the between-sum is the rest of the total — one pass over the n² distances (17x faster than block sums
    of a 2-D prefix-sum array gathered per split, for 100 permutations of 200 points)."""
    r, n = x.shape
    dist = np.abs(x[:, :, None] - x[:, None, :])
    low = np.einsum("rkj,kj->rk", dist, np.tril(np.ones((n, n)), -1))  # Σ_{j<k} |x_k − x_j|
    up = dist.sum(axis=2) - low  # Σ_{j>k}
    zero = np.zeros((r, 1))
    within_first = np.concatenate([zero, np.cumsum(low, axis=1)], axis=1)  # [:, t]: the points before t
    within_last = np.concatenate(
        [np.cumsum(up[:, ::-1], axis=1)[:, ::-1], zero], axis=1
    )  # [:, t]: t and after
    tau = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    left, right = within_first[:, tau], within_last[:, tau]
    between = within_first[:, n : n + 1] - left - right
    m, k = tau, n - tau
    e = 2 * between / (m * k) - left / (m * (m - 1) / 2) - right / (k * (k - 1) / 2)
    q: Floats = (m * k / n) * e
    return q


def _best_split(x: Floats) -> tuple[int, float] | None:
    if len(x) < 2 * MIN_SIZE:
        return None
    q = _q_stats(x[None, :])[0]
    i = int(np.argmax(q))
    return MIN_SIZE + i, float(q[i])


def _p_value(x: Floats, observed: float, permutations: int, rng: np.random.Generator, alpha: float) -> float:
    """The permutation p-value (1 + #exceeding) / (permutations + 1). In batches: the distance matrices of all
    permutations at once are permutations·n² floats (1.6 GB for a history of 1000 runs). It stops early once
    the split can no longer be significant at `alpha` (Besag & Clifford's sequential p-value, then returned as
    exceeding/done): the decision is the same as with every permutation, for a fraction of the work on the
    last, non-significant split of every series."""
    batch = max(1, min(BATCH, CHUNK_FLOATS // (len(x) * len(x))))
    exceed = done = 0
    while done < permutations:
        perms = np.stack([rng.permutation(x) for _ in range(min(batch, permutations - done))])
        exceed += int(np.sum(_q_stats(perms).max(axis=1) >= observed - 1e-12 * abs(observed)))
        done += len(perms)
        if (1 + exceed) / (permutations + 1) > alpha:
            return float((1 + exceed) / (done + 1))
    return float((1 + exceed) / (permutations + 1))


def _exact_p_value(x: Floats, observed: float) -> float:
    """The share of all n! orderings of x whose best split reaches `observed` (the observed one among them).

    Q(τ) of an ordering depends only on the set S of its first τ points: from the within-sums W(S), W(S̄) and the
    between-sum of the two sets. count[S] is the number of orderings of S, as the first |S| points, in which no
    prefix of a testable size reaches `observed`; count[S] = Σ_{i∈S} count[S∖{i}], zero where S itself does."""
    n = x.size
    dist = np.abs(x[:, None] - x[None, :])
    masks = np.arange(1 << n)
    bits = ((masks[:, None] >> np.arange(n)) & 1).astype(float)
    size = bits.sum(axis=1).astype(int)
    within = 0.5 * ((bits @ dist) * bits).sum(axis=1)
    between = bits @ dist.sum(axis=1) - 2 * within
    within_rest = within[-1] - within - between
    m, k = size, n - size
    testable = (m >= MIN_SIZE) & (k >= MIN_SIZE)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = 2 * between / (m * k) - within / (m * (m - 1) / 2) - within_rest / (k * (k - 1) / 2)
        reaches = testable & ((m * k / n) * e >= observed - 1e-12 * abs(observed))
    count = np.zeros(1 << n, dtype=np.int64)  # n! ≤ 14! fits: exact integers
    count[0] = 1
    for s in range(1, n + 1):
        layer = masks[size == s]
        for i in range(n):
            has = layer[(layer >> i) & 1 == 1]
            count[has] += count[has ^ (1 << i)]
        count[layer[reaches[layer]]] = 0
    total = math.factorial(n)
    return (total - int(count[-1])) / total


def min_p_value(n: int, permutations: int = 199) -> float:
    """The smallest p-value a series of n points can reach: its best split's two sets (in any order within each,
    either set first) are in at least 2·τ!(n−τ)! of the n! orderings, fewest at τ = n/2; a sampled test's
    smallest p is 1/(permutations + 1), the robust test's 1/(simulations + 1)."""
    if n < 2 * MIN_SIZE:
        return 1.0
    sims = max(permutations, AR_SIMULATIONS_SHORT) if n <= EXACT_MAX else permutations
    return max(2 / math.comb(n, n // 2), 1 / (sims + 1))


def undetectable(n: int, alpha: float, permutations: int = 199) -> list[int]:
    """The splits τ (the new level's first point, 1 … n − 1) at which no step of any size can be shown at `alpha`
    in a series of n points: fewer than MIN_SIZE points on a side, or too few orderings — the two sets of a split
    at τ are in 2·τ!(n−τ)! of the n! orderings, so its p is at least 2/C(n, τ) (10 runs at α 0.01: τ = 3 and 7
    reach only 0.017)."""
    floor = min_p_value(n, permutations)
    return [
        tau
        for tau in range(1, n)
        if min(tau, n - tau) < MIN_SIZE or max(2 / math.comb(n, tau), floor) > alpha
    ]


def shortest_for(alpha: float, permutations: int = 199) -> int | None:
    """The fewest points in which a change point can be shown at `alpha` (None: in no series of 1000 points)."""
    return next((n for n in range(2 * MIN_SIZE, 1001) if min_p_value(n, permutations) <= alpha), None)


def residuals(x: Floats, split: int) -> Floats:
    """The points around the means of the two segments a split makes."""
    return np.concatenate([x[:split] - x[:split].mean(), x[split:] - x[split:].mean()])


def lag1(r: Floats) -> float:
    c = r - r.mean()
    denom = float(c @ c)
    return float(c[1:] @ c[:-1]) / denom if denom > 0 else 0.0


def phi_allowed(x: Floats, split: int) -> float:
    """The lag-1 autocorrelation the robust test draws its null with: the residuals' r₁, corrected for its bias
    (−(1 + 3φ)/n for a mean, about −2/n more for two fitted means), plus PHI_MARGIN standard errors."""
    n = x.size
    r1 = lag1(residuals(x, split))
    phi = r1 + (1 + 3 * r1) / n + 2.0 / n
    return float(min(max(phi + PHI_MARGIN * np.sqrt(max(1 - phi * phi, 0.05) / n), 0.0), PHI_MAX))


def _pivots(x: Floats) -> Floats:
    """Each row's best-split statistic divided by the rms of its points around the two segments' means."""
    r, n = x.shape
    q = _q_stats(x)
    best = np.argmax(q, axis=1)
    tau = MIN_SIZE + best
    c1 = np.concatenate([np.zeros((r, 1)), np.cumsum(x, axis=1)], axis=1)
    c2 = np.concatenate([np.zeros((r, 1)), np.cumsum(x * x, axis=1)], axis=1)
    rows = np.arange(r)
    s1, s2 = c1[rows, tau], c2[rows, tau]
    t1, t2 = c1[:, n] - s1, c2[:, n] - s2
    ss = s2 - s1 * s1 / tau + t2 - t1 * t1 / (n - tau)
    rms = np.sqrt(np.maximum(ss, 0.0) / n)
    pivots: Floats = q[rows, best] / np.maximum(rms, 1e-300)
    return pivots


def _ar_p_value(x: Floats, split: int, permutations: int, rng: np.random.Generator) -> tuple[float, float]:
    """The split's pivot against that of stationary AR(1) series with φ = phi_allowed (no change in them);
    returns (p, φ)."""
    phi = phi_allowed(x, split)
    n = x.size
    e = rng.standard_normal((permutations, n + BURN_IN))
    z = np.zeros_like(e)
    scale = np.sqrt(1 - phi * phi)
    for i in range(1, n + BURN_IN):
        z[:, i] = phi * z[:, i - 1] + scale * e[:, i]
    observed = float(_pivots(x[None, :])[0])
    null = _pivots(z[:, BURN_IN:])
    return float((1 + np.sum(null >= observed * (1 - 1e-12))) / (permutations + 1)), phi


def e_divisive(
    values: Sequence[float], *, alpha: float = 0.05, permutations: int = 199, seed: int = 0
) -> list[ChangePoint]:
    """The significant change points of `values` (in order), each with its p-value: the larger of the
    permutation test's and the autocorrelation-robust test's."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    bounds = [0, len(x)]
    found: list[ChangePoint] = []
    while True:
        candidates = []
        for a, b in itertools.pairwise(bounds):
            split = _best_split(x[a:b])
            if split is not None:
                candidates.append((split[1], a, b, a + split[0]))
        if not candidates:
            break
        stat, a, b, at = max(candidates)
        short = b - a <= EXACT_MAX
        p = _exact_p_value(x[a:b], stat) if short else _p_value(x[a:b], stat, permutations, rng, alpha)
        if p > alpha:
            break
        sims = max(permutations, AR_SIMULATIONS_SHORT) if short else permutations
        p_ar, phi = _ar_p_value(x[a:b], at - a, sims, rng)
        if max(p, p_ar) > alpha:
            break
        found.append(ChangePoint(index=at, p_value=max(p, p_ar), statistic=stat, phi=phi))
        bounds = sorted([*bounds, at])
    return sorted(found, key=lambda c: c.index)


def serial_warning(values: Sequence[float], found: Sequence[ChangePoint]) -> str | None:
    """A sentence when the points around the found segments' means are serially correlated (lag-1 r with a
    one-sided p < 0.05): change points assume independent runs, and a drifting machine can look like a step."""
    x = np.asarray(values, dtype=float)
    if x.size < 8:
        return None
    bounds = [0, *(c.index for c in found), x.size]
    r = np.concatenate([x[a:b] - x[a:b].mean() for a, b in itertools.pairwise(bounds)])
    from fairmark.stats.checks import _lag1

    r1, p = _lag1(r)
    if p >= 0.05:
        return None
    return (
        f"consecutive runs are correlated (lag-1 r = {r1:.2f} around the segments' means, p = {p:.2g}): change "
        "points assume independent runs, and a machine that drifts from run to run can look like a step; each "
        "change point here was also tested against autocorrelated noise (AR(1) up to the φ it names)"
    )
