"""Comparing two event rates (kernel events per minute of a stability run, variant A vs B).

Counts of rare events over an exposure time are Poisson. Given the total k = k_a + k_b, k_a is binomial with
p = t_a·λ_a / (t_a·λ_a + t_b·λ_b), so the exact conditional test and the Clopper–Pearson interval on p give an
exact CI for the rate ratio λ_a/λ_b = p/(1−p) · t_b/t_a, valid for any counts, zero included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RateComparison:
    events_a: int
    exposure_a: float
    events_b: int
    exposure_b: float
    ratio: float | None  # rate A / rate B (None when both counts are 0: no information)
    ci_low: float  # 0 when A had no event
    ci_high: float  # inf when B had no event
    p_value: float  # exact two-sided conditional binomial test of equal rates
    confidence: float

    @property
    def rate_a(self) -> float:
        return self.events_a / self.exposure_a

    @property
    def rate_b(self) -> float:
        return self.events_b / self.exposure_b


def compare_rates(
    events_a: int, exposure_a: float, events_b: int, exposure_b: float, confidence: float = 95.0
) -> RateComparison:
    from scipy import stats

    if min(events_a, events_b) < 0 or min(exposure_a, exposure_b) <= 0:
        raise ValueError("event counts must be ≥ 0 and exposures > 0")
    k, alpha = events_a + events_b, 1 - confidence / 100
    scale = exposure_b / exposure_a
    if k == 0:
        return RateComparison(events_a, exposure_a, 0, exposure_b, None, 0.0, math.inf, 1.0, confidence)
    lo = stats.beta.ppf(alpha / 2, events_a, k - events_a + 1) if events_a > 0 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, events_a + 1, k - events_a) if events_a < k else 1.0
    p0 = exposure_a / (exposure_a + exposure_b)
    p_value = float(stats.binomtest(events_a, k, p0).pvalue)

    def odds(p: float) -> float:
        return math.inf if p >= 1 else p / (1 - p) * scale

    ratio = odds(events_a / k) if events_b > 0 else math.inf
    return RateComparison(
        events_a, exposure_a, events_b, exposure_b, ratio, odds(lo), odds(hi), p_value, confidence
    )


def poisson_ci(events: int, exposure: float, confidence: float = 95.0) -> tuple[float, float]:
    """Exact (Garwood) confidence interval of a Poisson rate: `events` counted over `exposure` (minutes,
    trials …). Never below zero, and with an upper bound even for 0 events (3.69 / exposure at 95%), which a
    t-interval of per-trial counts gives neither of."""
    from scipy import stats

    if events < 0 or exposure <= 0:
        raise ValueError("an event count must be ≥ 0 and its exposure > 0")
    alpha = 1 - confidence / 100
    low = stats.chi2.ppf(alpha / 2, 2 * events) / 2 if events > 0 else 0.0
    high = stats.chi2.ppf(1 - alpha / 2, 2 * events + 2) / 2
    return float(low) / exposure, float(high) / exposure
