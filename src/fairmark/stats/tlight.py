"""Student t's upper tail and its inverse in the standard library alone, for the checks at the end of a run.

A one-cell run (a microbenchmark of 1200 trials) needs t only for its sample checks: the outliers' prediction
bound and the drift test's p-value. Importing scipy.special for them was 17 MB of the run's peak RSS and a tenth of
its CPU (issue 34 item 15). The tail is the regularized incomplete beta function by its continued fraction
(modified Lentz, as in Numerical Recipes' betacf), the quantile Newton's method on the log of the tail inside a
bisection bracket; both agree with scipy's stdtr and stdtrit to a relative 1e-9 over df 1…10⁵ and tails down to
1e-12 (tests/test_stats_tlight.py). Verdicts keep scipy (stats/tdist.py), whose other functions they need anyway.
"""

from __future__ import annotations

import math

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 100_000


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function I_x(a, b) (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITER):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta ({a}, {b}, {x}): the continued fraction did not converge")


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_sf(df: float, t: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom (scipy.special.stdtr(df, -t))."""
    if math.isnan(t) or not df > 0:
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))  # P(|T| > |t|) / 2
    return tail if t >= 0 else 1.0 - tail


def _log_pdf(df: float, t: float) -> float:
    return (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


def t_isf(df: float, q: float) -> float:
    """The t with P(T > t) = q (scipy.special.stdtrit(df, 1 − q)), for 0 < q < 1."""
    if not df > 0 or not 0.0 < q < 1.0:
        return math.nan
    if q > 0.5:
        return -t_isf(df, 1.0 - q)
    if q == 0.5:
        return 0.0
    low, high = 0.0, 1.0
    while t_sf(df, high) > q:  # a bracket [low, high] with sf(low) > q ≥ sf(high)
        low, high = high, high * 4.0
    t, target = (low + high) / 2.0, math.log(q)
    for _ in range(200):
        sf = t_sf(df, t)
        if sf > q:
            low = t
        else:
            high = t
        step = (math.log(sf) - target) * sf / math.exp(_log_pdf(df, t))  # Newton on log sf: d/dt = −pdf/sf
        new = t + step
        if not low < new < high:  # outside the bracket: bisect instead
            new = (low + high) / 2.0
        if abs(new - t) <= 1e-14 * max(1.0, abs(t)):
            return new
        t = new
    return t
