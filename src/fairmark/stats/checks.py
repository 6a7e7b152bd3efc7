"""Warnings about one sample: outliers (flagged, never dropped), drift over trial order, two modes.

Each check answers in numbers (which values, which way, what p); report/samples.py says them in plain sentences
because the reader is a person deciding whether to trust a verdict.
Dropping outliers is what turned a 31% regression into "~" in benchstat v1 (golang/go#19634): here they are
only named.
"""

from __future__ import annotations

import math

import numpy as np

from fairmark.stats.arrays import Floats, Indices, Values
from fairmark.stats.describe import as_array, median
from fairmark.stats.tlight import t_isf, t_sf  # not scipy: a one-cell run's end loads none (tlight's doc)

OUTLIER_Z = 3.5  # Iglewicz & Hoaglin's cut-off for the MAD modified z-score
OUTLIER_ALPHA = 0.01  # per cell, Bonferroni over its values: a normal cell is flagged at most 1% of the time
OUTLIER_MIN_N = 5  # below this the rest of the sample cannot say what is unusual
DRIFT_P = 0.01
DRIFT_MIN_N = 8  # a trend test has no power below this
# The trend test's variance allows for serial correlation of at least this much (lag-1 r = 0.5, variance
# factor (1 + r)/(1 − r) = 3), more when the data show more: a wandering but trend-free series must not be called
# a trend. Stronger serial correlation is reported by its own warning.
DRIFT_MIN_VARIANCE_FACTOR = 3.0
SERIAL_P = 0.01
BIMODAL_MIN_N = 8
BIMODAL_GAP = 4.0  # a gap this many within-cluster stddevs wide splits the sample in two


def modified_z(values: Values) -> Floats:
    """0.6745·(x − median)/MAD. When MAD is 0 (over half the values equal) the mean absolute deviation
    stands in (scaled by 0.7979 so both estimate σ for normal data); all zeros when both are 0."""
    x = as_array(values)
    return _modified_z(x, median(x))


def _modified_z(x: Floats, med: float) -> Floats:
    dev = x - med
    mad = median(np.abs(dev))
    if mad > 0:
        dev *= 0.6745  # in place: 0.6745·dev/mad, the same numbers without two more arrays
        dev /= mad
        return dev
    mean_ad = float(np.mean(np.abs(dev)))
    return dev / (1.253314 * mean_ad) if mean_ad > 0 else np.zeros_like(x)


def _tick(x: Floats) -> float:
    """The data's resolution as seen: the smallest gap between distinct values (a clock tick, a count)."""
    gaps = np.diff(np.sort(x))
    gaps = gaps[gaps > 0]  # between distinct values (np.unique's check for masked arrays imports numpy.ma)
    return float(gaps.min()) if gaps.size else 0.0


def _unusual_vs_rest(x: Floats, i: int) -> bool:
    """x[i] lies outside the (1 − α/n) prediction interval of the other values (normal theory): under normal
    data this flags a cell at most α of the time, whatever n (the MAD z alone flags 29% of normal cells at n = 3)."""
    rest = np.delete(x, i)
    sd = float(np.std(rest, ddof=1))
    bound = t_isf(rest.size - 1, OUTLIER_ALPHA / x.size / 2.0)
    return bool(abs(x[i] - rest.mean()) > bound * sd * np.sqrt(1.0 + 1.0 / rest.size))


def _unusual_vs_rest_all(x: Floats, candidates: Indices) -> list[bool]:
    """`_unusual_vs_rest` of every candidate at once: each one's rest (its mean and spread) from the sums of all
    values, in one pass instead of a copy of the sample per candidate — a run of 2000 trials of `true` had 274
    candidates, and the copies made the check grow with n². A candidate whose answer these sums cannot settle
    (within a relative 1e-9 of the bound, or a rest whose spread cancels out of the sums) is decided exactly."""
    n = x.size
    mean = float(x.mean())
    dev = x - mean
    ss = float(dev @ dev)
    d = dev[candidates]
    rest_ss = ss - d * d * (n / (n - 1))  # Σ over the rest of (x − rest mean)², about the rest's own mean
    bound = t_isf(n - 2, OUTLIER_ALPHA / n / 2.0)
    reach = bound * np.sqrt(np.maximum(rest_ss, 0.0) / (n - 2)) * np.sqrt(1.0 + 1.0 / (n - 1))
    gap = np.abs(d) * (n / (n - 1))  # |x[i] − the rest's mean|
    unsure = (np.abs(gap - reach) <= 1e-9 * (gap + reach)) | (rest_ss <= 1e-6 * ss)
    return [
        _unusual_vs_rest(x, int(i)) if u else bool(g > r)
        for i, g, r, u in zip(candidates, gap, reach, unsure, strict=True)
    ]


def outlier_indices(values: Values) -> list[int]:
    """0-based positions (in the order given, i.e. trial order) of values that are outliers by both the MAD
    modified z-score (> 3.5) and a Bonferroni prediction-interval test against the rest, and that lie more than
    one tick (the data's resolution) from the median: [10, 10, 10, 10, 11] has no outlier."""
    x = as_array(values)
    if x.size < OUTLIER_MIN_N:
        return []
    med = median(x)
    far = np.flatnonzero(np.abs(_modified_z(x, med)) > OUTLIER_Z)
    if far.size == 0:  # the usual sample: no sort for the tick
        return []
    far = far[np.abs(x[far] - med) > _tick(x) * (1 + 1e-9)]
    if far.size == 0:
        return []
    return [int(i) for i, unusual in zip(far, _unusual_vs_rest_all(x, far), strict=True) if unusual]


def _lag1(r: Floats) -> tuple[float, float]:
    """Lag-1 autocorrelation of `r` and its one-sided p against independence (normal approximation with the
    exact mean −1/n and variance of the iid case)."""
    n = r.size
    c = r - r.mean()
    denom = float(c @ c)
    if denom == 0:
        return 0.0, 1.0
    r1 = float(c[1:] @ c[:-1]) / denom
    var = (n - 2) ** 2 / (n**2 * (n - 1))
    # the normal tail by erfc (what scipy.special.ndtr computes): `history`'s serial warning loads no scipy
    return r1, 0.5 * math.erfc((r1 + 1.0 / n) / math.sqrt(2.0 * var))


def drift(values: Values) -> tuple[float, float] | None:
    """(slope t, p) of a linear trend over trial order when significant at p < 0.01, else None.

    The slope's variance is inflated for serial correlation (at least ×3, i.e. lag-1 r = 0.5, more when the
    residuals show more), so trend-free autocorrelated series are not called drift (Kendall's tau flagged 3–10%
    of them at p < 0.01)."""
    x = as_array(values)
    n = x.size
    if n < DRIFT_MIN_N or np.ptp(x) == 0:
        return None
    i = np.arange(n) - (n - 1) / 2
    slope = float(i @ x) / float(i @ i)
    resid = x - x.mean() - slope * i
    rho, _ = _lag1(resid)
    rho = min(max(rho + (1 + 3 * rho) / n, 0.0), 0.95)  # lag-1 r is biased low at small n
    factor = max(DRIFT_MIN_VARIANCE_FACTOR, (1 + rho) / (1 - rho))
    se = np.sqrt(float(resid @ resid) / (n - 2) / float(i @ i) * factor)
    if se == 0:  # a perfect line: nothing but trend
        return (math.copysign(math.inf, slope), 0.0)
    t = slope / se
    p = 2.0 * t_sf(n - 2, abs(t))
    return (t, p) if p < DRIFT_P else None


def serial_correlation(values: Values) -> tuple[float, float] | None:
    """(lag-1 r, p) when consecutive trials are positively correlated at p < 0.01 (a machine that wanders:
    each cell's CI, which assumes independent trials, is then too narrow), else None."""
    x = as_array(values)
    if x.size < DRIFT_MIN_N or np.ptp(x) == 0:
        return None
    r1, p = _lag1(x)
    return (r1, p) if p < SERIAL_P else None


def bimodal_split(values: Values) -> tuple[Floats, Floats] | None:
    """The two clusters when the widest gap in the sorted sample is ≥ 4 pooled within-cluster stddevs and
    each side holds at least max(3, n/5) values; None otherwise. A gap heuristic: cheap, explainable in a
    line."""
    x = np.sort(as_array(values))
    n = x.size
    if n < BIMODAL_MIN_N or np.ptp(x) == 0:
        return None
    least = max(3, n // 5)
    if n - least + 1 <= least:
        return None
    gaps = np.diff(x)[least - 1 : n - least]  # x[i] − x[i − 1] for the cuts i = least … n − least
    cut = least + int(np.argmax(gaps))
    low, high = x[:cut], x[cut:]
    within = np.sqrt(((low.size - 1) * low.var(ddof=1) + (high.size - 1) * high.var(ddof=1)) / (n - 2))
    if x[cut] - x[cut - 1] < BIMODAL_GAP * within:
        return None
    return low, high
