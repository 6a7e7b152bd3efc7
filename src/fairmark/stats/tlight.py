"""Student t's distribution, tail and quantile in the standard library alone: the one implementation in fairmark.

Every command that needs a t — a verdict's interval and p-value, the checks at a run's end (the outliers'
prediction bound, the drift test), the MDE, `compare` of plain files (stats/special.py's lean path) — takes it
from here. Importing scipy.special for it was 17 MB of a one-cell run's peak RSS and a tenth of its CPU (issue 34
item 15), and 0.35–0.5 s of a `compare` (issue 31 item 7).

The tail is the regularized incomplete beta function by its continued fraction (modified Lentz, as in Numerical
Recipes' betacf), its prefactor x^a·y^b/B(a, b) by Stirling's series where lgamma's differences would cancel (at
df 2e5 they cost 9 digits); the quantile is Newton's method on the log of the tail inside a bisection bracket (a
p of 1e-8, as the outlier test asks, keeps its digits). Both agree with scipy's stdtr and stdtrit to a relative
1e-10 over df 0.7…10⁶ and tails down to 1e-12 (tests/test_stats_tlight.py, tests/test_stats_special.py).
"""

from __future__ import annotations

import functools
import math

_EPS = 1e-15  # the continued fraction's convergence
_QUANTILE_EPS = 1e-16  # the quantile's
_TINY = 1e-300
_MAX_ITER = 100_000


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function I_x(a, b) (modified Lentz). It converges in
    O(√max(a, b)) steps: the bound grows with it so that df 10⁶ converges too."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITER + int(20 * math.sqrt(max(a, b)))):
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


def _stirling(x: float) -> float:
    """lgamma(x) − ((x − ½)·log x − x + ½·log 2π), for x ≥ 10 (the next term is < 2e-14)."""
    r = 1.0 / (x * x)
    return (1.0 / 12.0 - r * (1.0 / 360.0 - r * (1.0 / 1260.0 - r * (1.0 / 1680.0 - r / 1188.0)))) / x


def _log_front(a: float, b: float, log_x: float, log_y: float) -> float:
    """log(x^a·y^b / B(a, b)) without the cancellation of lgamma(a + b) − lgamma(a) − lgamma(b) at large a or b:
    Stirling's series, the large logarithms taken as ratios."""
    s = a + b
    if min(a, b) >= 10.0:
        return (
            a * (log_x - math.log(a / s))
            + b * (log_y - math.log(b / s))
            + 0.5 * math.log(a / s * b)
            - 0.5 * math.log(2.0 * math.pi)
            + _stirling(s)
            - _stirling(a)
            - _stirling(b)
        )
    if max(a, b) >= 10.0:  # one large, one small: lgamma(s) − lgamma(big) by Stirling, the small one exact
        big, small = (a, b) if a >= b else (b, a)
        rise = (
            (big - 0.5) * math.log1p(small / big)
            + small * math.log(s)
            - small
            + _stirling(s)
            - _stirling(big)
        )
        return a * log_x + b * log_y + rise - math.lgamma(small)
    return a * log_x + b * log_y + math.lgamma(s) - math.lgamma(a) - math.lgamma(b)


def upper_tail(df: float, s: float) -> float:
    """P(T > s) for s ≥ 0 (df = inf: the normal's)."""
    if math.isinf(df):
        return 0.5 * math.erfc(s / math.sqrt(2.0))
    s2 = s * s
    if s2 == 0.0:
        return 0.5
    a, b = df / 2.0, 0.5
    x, y = df / (df + s2), s2 / (df + s2)  # y apart from 1 − x, so that a far tail keeps its digits
    front = math.exp(_log_front(a, b, -math.log1p(s2 / df), math.log(s2) - math.log(df + s2)))
    if x < (a + 1.0) / (a + b + 2.0):
        return 0.5 * front * _betacf(a, b, x) / a
    return 0.5 * (1.0 - front * _betacf(b, a, y) / b)


def t_sf(df: float, t: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom (scipy.special.stdtr(df, -t))."""
    if math.isnan(t) or math.isnan(df) or not df > 0:
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = upper_tail(df, abs(t))
    return tail if t >= 0 else 1.0 - tail


def t_cdf(df: float, t: float) -> float:
    """P(T ≤ t) (scipy.special.stdtr(df, t)), its lower tail computed as such, not as 1 − the upper."""
    if math.isnan(t) or math.isnan(df) or not df > 0:
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = upper_tail(df, abs(t))
    return tail if t < 0 else 1.0 - tail


def density(df: float, s: float) -> float:
    """Student t's density at s."""
    if math.isinf(df):
        return math.exp(-0.5 * s * s) / math.sqrt(2.0 * math.pi)
    log_c = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1.0) / 2.0 * math.log1p(s * s / df))


@functools.lru_cache(
    maxsize=256
)  # the outlier bound of a sample is asked for by its verdict and its warnings
def t_isf(df: float, q: float) -> float:
    """The t with P(T > t) = q (scipy.special.stdtrit(df, 1 − q), without rounding 1 − q), for 0 < q < 1."""
    if math.isnan(df) or not df > 0 or not 0.0 < q < 1.0:
        return math.nan
    if q > 0.5:
        return -t_isf(df, 1.0 - q)
    return 0.0 if q == 0.5 else _tail_quantile(df, q)


def t_ppf(df: float, p: float) -> float:
    """The t with P(T ≤ t) = p (scipy.special.stdtrit(df, p)); ±inf at p 0 and 1."""
    if math.isnan(df) or math.isnan(p) or not df > 0 or not 0.0 <= p <= 1.0:
        return math.nan
    if p in (0.0, 1.0):
        return math.copysign(math.inf, p - 0.5)
    return -t_isf(df, p) if p < 0.5 else t_isf(df, 1.0 - p)  # 1 − p is exact for p ≥ ½


def _tail_quantile(df: float, q: float) -> float:
    """s > 0 with P(T > s) = q < ½: Newton on log P(T > s) (d/ds = −density/tail), kept inside a bracket that
    bisection narrows."""
    lo, hi = 0.0, 1.0
    while upper_tail(df, hi) > q:
        lo, hi = hi, hi * 4.0
    s = (lo + hi) / 2.0
    log_q = math.log(q)
    for _ in range(200):
        tail = upper_tail(df, s)
        if tail > q:
            lo = s
        else:
            hi = s
        dens = density(df, s)
        step = (math.log(tail) - log_q) * tail / dens if tail > 0 and dens > 0 else math.inf
        nxt = s + step
        if not lo < nxt < hi:  # outside the bracket: bisect instead
            nxt = (lo + hi) / 2.0
        if abs(nxt - s) <= 4 * _QUANTILE_EPS * abs(nxt) or hi - lo <= 4 * _QUANTILE_EPS * hi:
            return nxt
        s = nxt
    return s


def beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (scipy.special.betainc), by the same continued
    fraction as the t's tail."""
    if not 0.0 < x < 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(_log_front(a, b, math.log(x), math.log1p(-x)))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def f_ppf(d1: float, d2: float, p: float) -> float:
    """The F(d1, d2) quantile at p (scipy.stats.f.ppf): bisection on I_y(d1/2, d2/2), y = d1·f/(d1·f + d2),
    which is monotone in f (the variance split of stats/levels needs a few a verdict, not speed)."""
    if not (d1 > 0 and d2 > 0 and 0.0 < p < 1.0):
        return math.nan
    lo, hi = 0.0, 1.0
    for _ in range(200):  # y in (0, 1): 200 halvings reach the float's resolution
        mid = (lo + hi) / 2.0
        if beta_inc(d1 / 2.0, d2 / 2.0, mid) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    y = (lo + hi) / 2.0
    return d2 * y / (d1 * (1.0 - y))
