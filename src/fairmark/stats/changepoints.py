"""Change points in a performance history: e-divisive means with a permutation test (Matteson & James 2014).

The method the field uses for performance histories (MongoDB's `signal-processing-algorithms`, Apache Otava):
hierarchical splitting by the energy statistic, each split kept only when a permutation test says it is
significant at `alpha`; splitting stops at the first split that is not, so the chance of any false change point
in a series with none is at most `alpha`. Written here on numpy (both libraries pin numpy and scipy versions
fairmark cannot share; the README's design section says so). Distances use exponent 1 (the default of both).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CHUNK_FLOATS = 4_000_000  # per batch of permutations (32 MB of float64)
MIN_SIZE = 3  # each side of a split has at least this many points (a mean of 2 says little)


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first point of the new segment
    p_value: float
    statistic: float


def _block_sums(prefix: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Σ D[a:b, c:d] from 2-D prefix sums (leading zero row/column), vectorised over the last axis."""
    idx = np.arange(prefix.shape[0])[:, None] if prefix.ndim == 3 else None
    if idx is None:
        return prefix[b, d] - prefix[a, d] - prefix[b, c] + prefix[a, c]
    return prefix[idx, b, d] - prefix[idx, a, d] - prefix[idx, b, c] + prefix[idx, a, c]


def _q_stats(x: np.ndarray) -> np.ndarray:
    """The energy statistic Q(τ) for every split τ of each row of x (shape (R, n)) → (R, n - 2·MIN_SIZE + 1)."""
    r, n = x.shape
    dist = np.abs(x[:, :, None] - x[:, None, :])
    prefix = np.zeros((r, n + 1, n + 1))
    prefix[:, 1:, 1:] = dist.cumsum(1).cumsum(2)
    tau = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    zero, end = np.zeros_like(tau), np.full_like(tau, n)
    between = _block_sums(prefix, zero, tau, tau, end)
    left = _block_sums(prefix, zero, tau, zero, tau) / 2  # each pair counted twice in the square block
    right = _block_sums(prefix, tau, end, tau, end) / 2
    m, k = tau, n - tau
    e = 2 * between / (m * k) - left / (m * (m - 1) / 2) - right / (k * (k - 1) / 2)
    return (m * k / n) * e


def _best_split(x: np.ndarray) -> tuple[int, float] | None:
    if len(x) < 2 * MIN_SIZE:
        return None
    q = _q_stats(x[None, :])[0]
    i = int(np.argmax(q))
    return MIN_SIZE + i, float(q[i])


def _p_value(x: np.ndarray, observed: float, permutations: int, rng: np.random.Generator) -> float:
    # In batches: the distance matrices of all permutations at once are permutations·n² floats (1.6 GB for a
    # history of 1000 runs); a batch stays near CHUNK_FLOATS.
    batch = max(1, CHUNK_FLOATS // (len(x) * len(x)))
    exceed = 0
    for start in range(0, permutations, batch):
        perms = np.stack([rng.permutation(x) for _ in range(min(batch, permutations - start))])
        exceed += int(np.sum(_q_stats(perms).max(axis=1) >= observed - 1e-12 * abs(observed)))
    return float((1 + exceed) / (permutations + 1))


def e_divisive(
    values: Sequence[float], *, alpha: float = 0.05, permutations: int = 199, seed: int = 0
) -> list[ChangePoint]:
    """The significant change points of `values` (in order), each with its permutation p-value."""
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
        p = _p_value(x[a:b], stat, permutations, rng)
        if p > alpha:
            break
        found.append(ChangePoint(index=at, p_value=p, statistic=stat))
        bounds = sorted([*bounds, at])
    return sorted(found, key=lambda c: c.index)
