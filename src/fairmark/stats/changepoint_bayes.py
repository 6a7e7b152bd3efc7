"""The change-point statistic of a short segment (up to SHORT points): a Bayes factor of "one or two steps in
independent noise" against "no step in AR(1) noise with the φ of [0, PHI_MAX] that fits best".

Why not a t: the t of the best split, studentized for drift by a lag-1 estimate from 20 points, must be held to
the critical value of φ 0.6 noise whatever the data say, and that costs most of its power (a +5% step at sd 2%
found 22% of the time at α 0.01) while two close steps hide each other (4%). This statistic asks how much better
the series is explained by steps than by drift: a drifting series fits the AR(1) null about as well as it fits a
step, a stepped one does not. It is exactly location- and scale-free (a ratio of densities of the series'
direction after its mean is removed), so its null depends on n and φ only and is tabulated like the t's.

- Steps: Zellner's g-prior, the new level's shift ~ N(0, g σ²), averaged over G_PRIOR (small to large steps).
  The direction z of the centred series has the density |Σ|^(-1/2) (z'Σ⁻¹z)^(-k/2), k = n - 1, Σ = I + g V V'
  (V the centred step columns), closed form with one or two columns: the one-step and two-step models need no
  search, only a sum over every split (two-step: every pair MIN_SIZE apart). TWO_STEP_WEIGHT is the prior
  weight of two steps: without it a +10% staircase at 6 and 13 of 20 was found 3% of the time at α 0.01; even
  odds (0.5) cost a single step little (bench/continual_changepoints.py). Whether to report two splits once a
  segment is significant is decided at the lower PAIR_WEIGHT: a step larger than the g-prior expects leaves a
  residue a second column soaks up.
- Drift: the restricted (REML) likelihood of an AR(1) series around one mean, the largest over PHI_NULL.
- Where: the split with the largest posterior weight (one-step models and either side of two-step ones).
"""

from __future__ import annotations

import numpy as np

from fairmark.stats.arrays import Floats, Indices

SHORT = (
    64  # segments up to this long use this statistic (each such length has its own table: ≤ EXACT_LENGTHS)
)
G_PRIOR = (4.0, 9.0, 16.0)  # the step's prior variance in units of the noise's: sd 2, 3 and 4 σ
TWO_STEP_WEIGHT = 0.5  # prior weight of two steps in the test (one step: the rest); 0.25 cost the staircase
PAIR_WEIGHT = 0.25  # … and when saying which: at 0.5, 12-41% of one-step series of 20 runs reported two
PHI_MAX = 0.6
PHI_NULL = np.linspace(0.0, PHI_MAX, 13)


def _mean_exp(v: Floats) -> Floats:
    """log of the mean of exp(v) over the last axis, without overflow."""
    m = v.max(axis=-1, keepdims=True)
    out: Floats = (m + np.log(np.exp(v - m).mean(axis=-1, keepdims=True)))[..., 0]
    return out


def _drift(u: Floats) -> Floats:
    """Each row's best AR(1) REML log-likelihood around one mean over PHI_NULL, less φ 0's (≥ 0)."""
    n = u.shape[1]
    f = PHI_NULL[:, None, None]
    w = np.concatenate([np.sqrt(1 - f * f) * u[None, :, :1], u[None, :, 1:] - f * u[None, :, :-1]], axis=2)
    aa = (1 - f * f) + (n - 1) * (1 - f) ** 2
    aw = np.sqrt(1 - f * f) * w[:, :, :1] + (1 - f) * w[:, :, 1:].sum(axis=2, keepdims=True)
    rss = np.maximum((w * w).sum(axis=2, keepdims=True) - aw * aw / aa, 1e-300)
    ll = (-(n - 1) / 2 * np.log(rss) + 0.5 * np.log(1 - f * f) - 0.5 * np.log(aa))[:, :, 0]
    best: Floats = (ll - ll[:1]).max(axis=0)
    return best


def statistic(u: Floats, min_size: int) -> tuple[Floats, Floats]:
    """Each row's (log Bayes factor of steps against drift, most probable split) — rows of u shaped (R, n)."""
    r, n = u.shape
    k = n - 1
    y = u - u.mean(axis=1, keepdims=True)
    norm = np.sqrt((y * y).sum(axis=1, keepdims=True))
    # a row flat to the float's resolution (1e12 and its neighbours, as `publish` met) is centred only to
    # rounding: its z then has a step longer than its column (a² > ct) and log1p a negative argument below -1
    flat = norm <= 1e-12 * np.abs(u).max(axis=1, keepdims=True)
    z = np.where(flat, 0.0, y / np.maximum(norm, 1e-300))
    tau = np.arange(min_size, n - min_size + 1)
    cz = np.concatenate([np.zeros((r, 1)), np.cumsum(z, axis=1)], axis=1)
    a = cz[:, -1:] - cz[:, tau]  # z · each centred step column
    ct = tau * (n - tau) / n  # each column's squared length
    g = np.asarray(G_PRIOR)[:, None, None]
    one = -0.5 * np.log1p(g * ct) - k / 2 * np.log1p(-g * a[None] ** 2 / (1 + g * ct))  # (G, R, T)
    one = one.transpose(1, 0, 2)
    i1, i2 = np.triu_indices(tau.size, k=min_size)
    if i1.size == 0:  # fewer than 3 × min_size points: no room for two steps
        return _mean_exp(one.reshape(r, -1)) - _drift(u), tau[np.argmax(one.max(axis=1), axis=1)]
    two = _two_steps(a[:, i1], a[:, i2], ct[i1], ct[i2], tau[i1] * (n - tau[i2]) / n, k)  # (R, G, P)
    lo, lt = _mean_exp(one.reshape(r, -1)), _mean_exp(two.reshape(r, -1))
    alt = np.logaddexp(lo + np.log(1 - TWO_STEP_WEIGHT), lt + np.log(TWO_STEP_WEIGHT))
    return alt - _drift(u), tau[_where(one, two, i1, i2, tau.size)]


def two_splits(u: Floats, min_size: int) -> tuple[int, int] | None:
    """The most probable pair of splits of one series u (its points in order) when two steps are more probable than
    one a posteriori, else None. Used once a segment's test has shown some step: without it a staircase's second
    step, 7 points from the first, had to show itself again in a 14-point side."""
    n = u.size
    z = (u - u.mean()) / max(float(np.sqrt(((u - u.mean()) ** 2).sum())), 1e-300)
    tau = np.arange(min_size, n - min_size + 1)
    i1, i2 = np.triu_indices(tau.size, k=min_size)
    if i1.size == 0:
        return None
    a = (np.cumsum(z[::-1])[::-1][tau])[None, :]  # z · each centred step column
    ct = tau * (n - tau) / n
    g = np.asarray(G_PRIOR)[:, None]
    one = -0.5 * np.log1p(g * ct) - (n - 1) / 2 * np.log1p(-g * a**2 / (1 + g * ct))
    two = _two_steps(a[:, i1], a[:, i2], ct[i1], ct[i2], tau[i1] * (n - tau[i2]) / n, n - 1)[0]
    if _mean_exp(two.ravel()) + np.log(PAIR_WEIGHT) <= _mean_exp(one.ravel()) + np.log(1 - PAIR_WEIGHT):
        return None
    best = int(np.argmax(_mean_exp(two.T)))
    return int(tau[i1[best]]), int(tau[i2[best]])


def _two_steps(a1: Floats, a2: Floats, c11: Floats, c22: Floats, c12: Floats, k: int) -> Floats:
    """log Bayes factors of every pair of splits (R, G, P): Σ = I + g V V' with V's Gram matrix [[c11, c12],
    [c12, c22]] and z'V = (a1, a2)."""
    g = np.asarray(G_PRIOR)[:, None]
    m11, m22, m12 = 1 + g * c11, 1 + g * c22, g * c12
    det = m11 * m22 - m12 * m12
    a1, a2 = a1[:, None, :], a2[:, None, :]
    q = (m22 * a1 * a1 - 2 * m12 * a1 * a2 + m11 * a2 * a2) / det
    out: Floats = -0.5 * np.log(det)[None] - k / 2 * np.log1p(-g[None] * q)
    return out


def _where(one: Floats, two: Floats, i1: Indices, i2: Indices, t: int) -> Indices:
    """Each row's split of largest posterior weight: a one-step model's, or either of a two-step model's."""
    ref = np.maximum(one.max(axis=(1, 2)), two.max(axis=(1, 2)))[:, None]
    w1 = np.exp(one - ref[:, :, None]).sum(axis=1) * (1 - TWO_STEP_WEIGHT) / (one.shape[1] * t)
    w2 = np.exp(two - ref[:, :, None]).sum(axis=1) * TWO_STEP_WEIGHT / (two.shape[1] * two.shape[2])
    incidence = np.zeros((i1.size, t))
    incidence[np.arange(i1.size), i1] = incidence[np.arange(i1.size), i2] = 1.0
    marg = w1 + w2 @ incidence
    where: Indices = np.argmax(marg, axis=1)
    return where
