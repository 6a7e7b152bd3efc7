"""Spread as a result (seed 003: restart the server between runs "so you get more consistent, more precise
measurements"): is B's spread different from A's? Brown–Forsythe's test (Levene's test on deviations from
the median, robust to skew) for equal spread, and the ratio of the coefficients of variation CV_B / CV_A with a
percentile bootstrap interval (the two cells resampled independently, a fixed seed so the same samples always
give the same interval)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairmark.stats.arrays import Floats

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject

RESAMPLES = 4000
SEED = 20031  # fixed: a report read twice shows the same interval


@dataclass(frozen=True)
class SpreadVerdict:
    n_baseline: int
    n_other: int
    cv_baseline_pct: float
    cv_other_pct: float
    cv_ratio: float  # CV of the other cell ÷ CV of the baseline
    ci_low: float  # percentile bootstrap interval of cv_ratio
    ci_high: float
    brown_forsythe_p: float
    significant: bool  # Brown–Forsythe rejects equal spread at the run's confidence
    confidence_pct: float  # the level of the interval and of the test

    def to_dict(self) -> JSONObject:
        out: JSONObject = asdict(self)
        return out


def _cv(x: Floats, axis: int = -1) -> Floats:
    cv: Floats = np.std(x, ddof=1, axis=axis) / np.abs(np.mean(x, axis=axis))
    return cv


def compare_spread(
    baseline: Sequence[float],
    other: Sequence[float],
    *,
    confidence: float,
) -> SpreadVerdict | None:
    """None when either side has fewer than 3 values or a zero mean (no CV)."""
    a, b = np.asarray(baseline, float), np.asarray(other, float)
    if len(a) < 3 or len(b) < 3 or not a.mean() or not b.mean():
        return None
    from scipy import stats

    p = float(stats.levene(a, b, center="median").pvalue) if np.ptp(a) or np.ptp(b) else 1.0
    cv_a, cv_b = float(_cv(a)), float(_cv(b))
    ratio = cv_b / cv_a if cv_a else float("inf")
    # A resample of equal values has no CV, so with many ties the ratio's percentiles are nan (the report then
    # says there is no interval), and numpy's and scipy's warnings would only reach the terminal as noise.
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        boot = stats.bootstrap(
            (a, b),
            lambda x, y, axis=-1: _cv(y, axis) / _cv(x, axis),
            confidence_level=confidence / 100.0,
            n_resamples=RESAMPLES,
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(SEED),
        )
    lo, hi = float(boot.confidence_interval.low), float(boot.confidence_interval.high)
    significant = p < 1 - confidence / 100.0
    return SpreadVerdict(len(a), len(b), 100 * cv_a, 100 * cv_b, ratio, lo, hi, p, significant, confidence)
