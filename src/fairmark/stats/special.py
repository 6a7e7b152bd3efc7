"""The special functions a verdict needs — Student t's distribution and quantile, the normal tail, the power of a
t test at a noncentrality, χ² quantiles — from scipy.special, or, inside `lean()`, from numpy and the standard
library alone (the sample checks and the median's rank never need scipy: stats/tlight.py, describe.median_rank).

Why two: `fairmark compare a.txt b.txt` is ministat's job, and ministat starts in milliseconds; importing
scipy.special costs 0.35–0.5 s of CPU and 27 MB on this VM (numpy alone 0.13 s and 22 MB), more than the whole
command may cost (issue 31 item 7: ≤ 0.3 s, ≤ 40 MB for two files of 100 000 lines). So `compare` of plain files
runs its statistics inside `lean()`, and every other command keeps scipy. The lean functions agree with scipy to
1e-10 or better (tests/test_stats_special.py checks them on grids against scipy, and the two paths' printed
output on the same files):

* Student t: stats/tlight.py's (the one implementation: the incomplete beta's continued fraction, the quantile
  by a safeguarded Newton iteration on the log of the tail);
* the power of a two-sided t test at noncentrality δ, P(|Z + δ| > t·√(V/df)) with V ~ χ²_df: the expectation over
  V by the trapezoidal rule on log V, which converges geometrically for a smooth integrand decaying on both
  sides (nodes 0.3 standard deviations apart, out to where the density is e⁻⁴⁰ of its peak); scipy's nctdtr
  computes the same probability one tail at a time;
* χ² quantiles: the regularized lower incomplete gamma by its series (summed in one array, logs of the terms
  taken from a cumulative sum), Newton's iteration from the Wilson-Hilferty start.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from collections.abc import Iterator

import numpy as np

from fairmark.stats.arrays import Floats
from fairmark.stats.tlight import t_cdf, t_ppf

_state = {"lean": False, "reuse_scipy": True}  # tests set reuse_scipy False
_TINY = 1e-300


@contextlib.contextmanager
def lean() -> Iterator[None]:
    """Inside: the functions below use no scipy (restored after, so a test or a longer process is unaffected)."""
    before, _state["lean"] = _state["lean"], True
    try:
        yield
    finally:
        _state["lean"] = before


@contextlib.contextmanager
def general() -> Iterator[None]:
    """Inside: scipy's functions again, even within lean() (where the lean ones would be slower)."""
    before, _state["lean"] = _state["lean"], False
    try:
        yield
    finally:
        _state["lean"] = before


def is_lean() -> bool:
    """Whether the lean functions are in use: inside lean(), unless this process has scipy.special loaded anyway
    (a test, a longer program: there it costs nothing, and its noncentral t is 6× faster than the quadrature —
    216 compares in one process took 3 s of CPU lean, 0.5 s with scipy; the printed output is the same)."""
    return _state["lean"] and not (_state["reuse_scipy"] and "scipy.special" in sys.modules)


def stdtr(df: float, t: float) -> float:
    """P(T ≤ t) for Student's t with `df` degrees of freedom."""
    if not is_lean():
        from scipy import special

        return float(special.stdtr(df, t))
    return t_cdf(df, t)


def stdtrit(df: float, p: float) -> float:
    """The t with P(T ≤ t) = p."""
    if not is_lean():
        from scipy import special

        return float(special.stdtrit(df, p))
    return t_ppf(df, p)


def ndtr(x: float) -> float:
    """P(Z ≤ x) for the standard normal (the same erfc either way)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def t_power(df: float, nc: Floats, t_crit: float) -> Floats:
    """P(|T'| > t_crit) for the noncentral t with `df` degrees of freedom at each noncentrality in `nc`."""
    if not is_lean():
        from scipy import special

        upper = 1.0 - special.nctdtr(df, nc, t_crit)
        # The far tail P(T' < −t) is ~0 at a large noncentrality, where scipy's series can return nan.
        lower = np.nan_to_num(special.nctdtr(df, nc, -t_crit), nan=0.0)
        return np.asarray(upper + lower, dtype=np.float64)
    return _t_power(df, np.asarray(nc, dtype=np.float64), t_crit)


def chi2_upper_quantiles(df: float, p: Floats) -> Floats:
    """x with P(χ²_df > x) = p, for each p (scipy's chdtri)."""
    if not is_lean():
        from scipy import special

        return np.asarray(special.chdtri(df, p), dtype=np.float64)
    return 2.0 * _gamma_upper_quantiles(df / 2.0, np.asarray(p, dtype=np.float64))


# --- the noncentral t's power, by the expectation over the χ² of the spread --------------------------------

_PHI_STEP = 1.0 / 256.0  # Φ's table: cubic Hermite between nodes this far apart is within 1e-12 of Φ
_PHI_REACH = 12.0  # beyond ±12, Φ is 0 or 1 within 2e-33


@functools.lru_cache(maxsize=1)
def _phi_table() -> tuple[Floats, Floats]:
    x = np.arange(-_PHI_REACH, _PHI_REACH + _PHI_STEP / 2, _PHI_STEP)
    value = np.array([0.5 * math.erfc(-t / math.sqrt(2.0)) for t in x.tolist()])
    return value, np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def normal_cdf(x: Floats) -> Floats:
    """Φ(x) for an array, within 1e-12 of scipy's ndtr: cubic Hermite interpolation of math.erfc's values and
    the exact density on a grid (numpy has no erf; math.erfc element by element took 50 ms of a 100 000-line
    `compare`'s MDE, and 13 ms per 98 304 values of the two-stage factor, asked ~25 times)."""
    value, slope = _phi_table()
    pos = (np.clip(x, -_PHI_REACH, _PHI_REACH) + _PHI_REACH) / _PHI_STEP
    i = np.minimum(pos.astype(np.int64), value.size - 2)
    f = pos - i
    f2 = f * f
    f3 = f2 * f
    out = (2 * f3 - 3 * f2 + 1) * value[i] + (3 * f2 - 2 * f3) * value[i + 1]
    out += _PHI_STEP * ((f3 - 2 * f2 + f) * slope[i] + (f3 - f2) * slope[i + 1])
    return np.asarray(out, dtype=np.float64)


def _log_chi2_nodes(df: float, sharpest: float) -> tuple[Floats, Floats]:
    """Nodes z = log(V/df) and normalized trapezoid weights of the density of log V, V ~ χ²_df: the density is
    ∝ exp(k·(1 + z − e^z)), k = df/2, from where it is e⁻⁴⁰ of its peak on the left to the same on the right.
    `sharpest` bounds the slope of Φ's argument in z (t·e^(z/2)/2 where it crosses δ): the nodes are 0.3/it apart
    at most, so a step of Φ is seen by several (at df 2, t 4.3, δ 20 a spacing of 0.3/√k missed it by 2e-6)."""
    k = df / 2.0
    left, right = _where_falls(k, -1.0), _where_falls(k, 1.0)
    h = 0.3 * min(1.0 / math.sqrt(k), 1.0 / sharpest)
    z = np.asarray(np.arange(math.floor(left / h), math.ceil(right / h) + 1) * h, dtype=np.float64)
    w = np.exp(k * (1.0 + z - np.exp(z)))
    return z, np.asarray(w / w.sum(), dtype=np.float64)


def _where_falls(k: float, sign: float, drop: float = 40.0) -> float:
    """z of sign `sign` where k·(e^z − 1 − z) = drop (Newton from the side where it converges monotonically)."""
    z = sign * max(math.sqrt(2.0 * drop / k), drop / k + 1.0 if sign < 0 else 0.0)
    if sign > 0:
        z = max(z, math.log(drop / k + 1.0) + 1.0)
    for _ in range(100):
        f = k * (math.expm1(z) - z) - drop
        step = f / (k * math.expm1(z))
        z -= step
        if abs(step) < 1e-12 * max(1.0, abs(z)):
            break
    return z


def _t_power(df: float, nc: Floats, t_crit: float) -> Floats:
    z, w = _log_chi2_nodes(df, (float(np.max(nc, initial=0.0)) + t_crit) / 2.0)
    reach = t_crit * np.exp(z / 2.0)[:, None]  # t·√W at each node
    delta = nc[None, :]
    inside = normal_cdf(delta - reach) + normal_cdf(-delta - reach)
    return np.asarray(w @ inside, dtype=np.float64)


# --- χ² quantiles --------------------------------------------------------------------------------------------


def _gamma_lower(a: float, g: Floats) -> Floats:
    """P(a, g) for each g, 16 at a time (at df 2e5 the terms of all 96 held 11 MB at once)."""
    return np.concatenate([_gamma_lower_rows(a, g[i : i + 16]) for i in range(0, g.size, 16)])


def _gamma_lower_rows(a: float, g: Floats) -> Floats:
    """The regularized lower incomplete gamma P(a, g) by its series e^−g g^a/Γ(a+1) · Σ_n g^n/((a+1)…(a+n)),
    every term's log from one cumulative sum (no cancellation: all terms are positive)."""
    top = float(np.max(g))
    n_terms = int(max(top - a, 0.0) + 9.0 * math.sqrt(top + 1.0) + 60.0)
    m = np.arange(1, n_terms + 1, dtype=np.float64)
    log_rise = np.concatenate([[0.0], np.cumsum(np.log(a + m))])  # log (a+1)…(a+n), n = 0…
    log_terms = np.arange(n_terms + 1)[None, :] * np.log(g)[:, None] - log_rise[None, :]
    peak = log_terms.max(axis=1)
    log_sum = peak + np.log(np.exp(log_terms - peak[:, None]).sum(axis=1))
    return np.asarray(np.exp(-g + a * np.log(g) - math.lgamma(a + 1.0) + log_sum), dtype=np.float64)


def _gamma_upper_quantiles(a: float, p: Floats) -> Floats:
    """g with Q(a, g) = 1 − P(a, g) = p: Newton on log g from the Wilson-Hilferty start."""
    z = _normal_upper_quantiles(p)
    c = 1.0 / (9.0 * a)
    g = np.maximum(a * (1.0 - c + z * math.sqrt(c)) ** 3, 1e-3 * a)
    log_g = np.log(g)
    last = math.inf
    for _ in range(
        40
    ):  # from Wilson-Hilferty's start 2–4 steps; then the series' own rounding (~1e-11) is left
        g = np.exp(log_g)
        upper = 1.0 - _gamma_lower(a, g)
        dens = np.exp(-g + a * log_g - math.lgamma(a))  # g · the Gamma(a) density at g
        step = np.clip((upper - p) / np.maximum(dens, _TINY), -1.0, 1.0)
        log_g += step
        size = float(np.max(np.abs(step)))
        if size < 1e-12 or (size > last / 2 and size < 1e-9):
            break
        last = size
    return np.asarray(np.exp(log_g), dtype=np.float64)


def _normal_upper_quantiles(p: Floats) -> Floats:
    """z with P(Z > z) = p (Newton on the normal tail; p away from 0 and 1, as the bins' midpoints are)."""
    z = np.zeros_like(p)
    for _ in range(100):
        tail = 1.0 - normal_cdf(z)
        dens = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        step = np.clip((tail - p) / dens, -2.0, 2.0)
        z += step
        if np.all(np.abs(step) < 1e-13):
            break
    return z
