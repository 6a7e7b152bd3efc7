"""Per-cell summary: N, min, max, median, mean, stddev, CV, the confidence interval of the mean, and the
median's own distribution-free interval (order statistics; none when n is too small for the level)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairmark.errors import InputError
from fairmark.stats.arrays import Floats, Values
from fairmark.stats.tdist import t_quantile

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject


@dataclass(frozen=True)
class Summary:
    n: int
    min: float
    max: float
    median: float  # mean of the two middle values for even n (ministat 20150715 prints the upper one)
    mean: float
    stddev: float  # sample standard deviation (n − 1); nan for n < 2
    cv: float  # stddev/|mean|; nan when undefined (n < 2 or mean 0)
    confidence: float
    ci_half_width: float  # t·s/√n, t for df = n − 1 (nan for n < 2)
    ci_low: float
    ci_high: float
    median_ci_low: float = math.nan  # order-statistic CI of the median (nan: n too small for this level)
    median_ci_high: float = math.nan

    @property
    def ci_pct(self) -> float:
        """Half-width of the CI in percent of |mean| (nan when undefined)."""
        return _ratio(100.0 * self.ci_half_width, abs(self.mean))

    def to_dict(self) -> JSONObject:
        out: JSONObject = {**asdict(self), "ci_pct": self.ci_pct}
        for key in (
            "median_ci_low",
            "median_ci_high",
        ):  # JSON has no NaN (PostgreSQL refuses it): no interval
            if not math.isfinite(self.__dict__[key]):
                out[key] = None
        return out


# Sums of up to a million such values stay finite (1.8e308 is the largest double); variances are computed on
# scaled deviations (sample_sd), so neither 1e300 nor 1e-300 over- or underflows.
MAX_ABS = 1e300
MAX_ABS_TEXT = "1e300"


def as_array(values: Values) -> Floats:
    """Values as a float array; a NaN or infinity is refused: it is never a measurement."""
    arr = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InputError(f"value #{bad} is {arr[bad]!r}, not a finite number")
    if arr.size and np.max(np.abs(arr)) > MAX_ABS:  # sums of many such values would overflow
        bad = int(np.argmax(np.abs(arr)))
        raise InputError(
            f"value #{bad} is {arr[bad]:g}: larger in magnitude than {MAX_ABS_TEXT}, past which sums overflow"
        )
    return arr


def sample_sd(x: Floats) -> float:
    """Sample standard deviation (n − 1) computed on deviations scaled to at most 1: values near 1e-300 do not
    underflow to zero spread, values near 1e300 do not overflow (nan for n < 2)."""
    if x.size < 2:
        return math.nan
    if (
        x.min() == x.max()
    ):  # equal values: exactly no spread (their mean can differ from them in the last bit)
        return 0.0
    dev = x - x.mean()
    scale = max(float(dev.max()), -float(dev.min()))  # max |dev| without an array of them
    if scale == 0 or not math.isfinite(scale):
        return 0.0 if scale == 0 else math.nan
    dev /= scale  # in place: the same numbers, one array instead of three
    return scale * math.sqrt(float(np.sum(np.square(dev, out=dev))) / (x.size - 1))


def exact_mean(x: Floats) -> float:
    """The mean; of equal values exactly that value (a summed mean of 0.1 three times is 0.10000000000000002,
    which drew a plot and an interval around a constant)."""
    if x.size and x.min() == x.max():
        return float(x[0])
    return float(np.mean(x))


def mean_ci(values: Values, confidence: float = 95.0) -> tuple[float, float, float]:
    """(mean, sample standard deviation, half-width of the mean's CI) as `describe` gives them (nan for n < 2),
    without the order statistics: cheap enough for the progress line of every trial."""
    arr = as_array(values)
    n = arr.size
    if n == 0:
        raise InputError("no values to describe")
    mean = exact_mean(arr)
    sd = sample_sd(arr)
    half = t_quantile(confidence, n - 1) * sd / math.sqrt(n) if n > 1 else math.nan
    return mean, sd, half


class RunningMean:
    """Welford's running mean and variance of a list that only grows: the progress line's mean ± CI in O(1) per
    trial (the same values as `mean_ci` up to rounding in the last digits)."""

    def __init__(self) -> None:
        self.n, self.mean, self._m2 = 0, 0.0, 0.0

    def update(self, values: Sequence[float]) -> RunningMean:
        """Take in the values appended since the last call."""
        for x in values[self.n :]:
            self.n += 1
            delta = x - self.mean
            self.mean += delta / self.n
            self._m2 += delta * (x - self.mean)
        return self

    def ci_half_width(self, confidence: float = 95.0) -> float:
        if self.n < 2:
            return math.nan
        return t_quantile(confidence, self.n - 1) * math.sqrt(self._m2 / (self.n - 1)) / math.sqrt(self.n)


def median(x: Floats) -> float:
    """np.median of a finite sample, bit for bit, without its NaN check (which imports numpy.ma: 30 ms and 2 MB
    that `fairmark compare` of two files would pay)."""
    n = x.size
    if n == 0:
        return math.nan
    k = n // 2
    part = np.partition(x, k)
    if n % 2:
        return float(part[k])
    # the lower middle is the largest value below part[k]: np.partition with both positions, (k − 1, k), took
    # 1.8 ms at n = 100 000 against 0.16 ms for one position and this max (the same two values, the same sum)
    return float((part[:k].max() + part[k]) / 2.0)


def describe(values: Values, confidence: float = 95.0) -> Summary:
    arr = as_array(values)
    mean, sd, half = mean_ci(arr, confidence)
    n = arr.size
    ordered = np.sort(arr)  # once, for the median and its interval
    mlow, mhigh = _median_ci_sorted(ordered, confidence)
    k = n // 2
    return Summary(
        n=n,
        min=float(arr.min()),
        max=float(arr.max()),
        median=float(ordered[k] if n % 2 else (ordered[k - 1] + ordered[k]) / 2.0),
        mean=mean,
        stddev=sd,
        cv=_ratio(sd, abs(mean)),
        confidence=float(confidence),
        ci_half_width=half,
        ci_low=mean - half,
        ci_high=mean + half,
        median_ci_low=mlow,
        median_ci_high=mhigh,
    )


def median_ci(values: Values, confidence: float) -> tuple[float, float]:
    """Distribution-free CI of the median: [x₍ⱼ₎, x₍ₙ₋ⱼ₊₁₎] with the largest j whose coverage
    1 − 2·P(Binomial(n, ½) < j) is still ≥ the level. (nan, nan) when even [min, max] covers less (n ≤ 5 at 95%)."""
    return _median_ci_sorted(np.sort(as_array(values)), confidence)


def _median_ci_sorted(x: Floats, confidence: float) -> tuple[float, float]:
    n = x.size
    if n == 0:
        return (math.nan, math.nan)
    best = median_rank(n, confidence)
    if best == 0:
        return (math.nan, math.nan)
    return (float(x[best - 1]), float(x[n - best]))


EXACT_RANK_MAX_N = 5000  # exact integer tails up to here (~3 ms at 5000); lgamma sums above


@functools.lru_cache(maxsize=256)  # files or cells of one size: summed once (1 ms at n = 100 000)
def median_rank(n: int, confidence: float) -> int:
    """The largest j in 1…n//2 with 1 − 2·P(Binomial(n, ½) ≤ j − 1) ≥ confidence/100, or 0. Without scipy:
    importing scipy.special for this one tail was 17 MB of a run's peak RSS and a tenth of its end's CPU; the
    tail is exact in integers (Σ C(n, k) against the level's exact fraction of 2ⁿ⁻¹), and summed in floats from
    log-gamma terms for larger n, as scipy's bdtr is in floats (tests/test_stats_describe.py compares both)."""
    if n > EXACT_RANK_MAX_N:
        return _median_rank_float(n, confidence)
    from fractions import (
        Fraction,
    )  # here: with decimal, 1.6 ms of a start; above 5000 values it is not needed

    num, den = (1 - Fraction(confidence) / 100).as_integer_ratio()  # α, exactly
    limit, best, term, tail = num << (n - 1), 0, 1, 0  # tail·den ≤ α·2ⁿ⁻¹·den ⇔ coverage ≥ level
    for j in range(1, n // 2 + 1):
        tail += term  # Σ_{k<j} C(n, k)
        if tail * den > limit:
            break
        best, term = j, term * (n - j + 1) // j
    return best


def _median_rank_float(n: int, confidence: float) -> int:
    half_alpha, log_all = (1 - confidence / 100) / 2, math.lgamma(n + 1) - n * math.log(2)
    # The terms more than 9 standard deviations (√n/2) below n/2 sum to ~1e-19 (the normal tail there), nothing
    # against the α/2 of any level below 99.99999999%: the sum starts there (n = 100 000: 1 400 terms, not 50 000;
    # `compare` of two such files computed four medians' ranks in 0.3 s).
    first = max(1, int(n / 2 - 9 * math.sqrt(n) / 2))
    best, tail = first - 1, 0.0
    for j in range(first, n // 2 + 1):
        k = j - 1
        tail += math.exp(log_all - math.lgamma(k + 1) - math.lgamma(n - k + 1))
        if tail > half_alpha:
            break
        best = j
    return best


def ministat_median(values: Sequence[float]) -> float:
    """The median ministat 20150715 prints: the element at index n/2 of the sorted data (upper middle); any
    finite double, as ministat takes it."""
    arr = np.sort(np.asarray(values, dtype=np.float64).ravel())
    return float(arr[arr.size // 2])


def _ratio(num: float, den: float) -> float:
    if den == 0 or math.isnan(den) or math.isnan(num):
        return math.nan
    return num / den


# a boot run's within-unit spread (stats.levels, report/boots.py): here, so that `show` of other runs loads no levels
def pooled_var(groups: Sequence[Floats]) -> tuple[float, int]:
    """Pooled variance of groups with ≥ 2 members, and its df; (nan, 0) when none has."""
    ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups if g.size >= 2)
    df = sum(g.size - 1 for g in groups if g.size >= 2)
    return (ss / df if df else math.nan), df
