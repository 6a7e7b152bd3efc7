"""Poisson rate comparison (stability runs' kernel events per minute): exact conditional binomial CI."""

from __future__ import annotations

import math

import pytest

from fairmark.report.stability import rate_sentence
from fairmark.stats.rates import compare_rates


def test_equal_exposure_known_values():
    r = compare_rates(10, 60.0, 2, 60.0)
    assert r.ratio == pytest.approx(5.0)
    # Clopper-Pearson for 10/12 at 95%: [0.5159, 0.9791] → odds [1.066, 46.9]
    assert r.ci_low == pytest.approx(0.5159 / 0.4841, rel=1e-3)
    assert r.ci_high == pytest.approx(0.97906 / 0.02094, rel=1e-2)
    assert r.p_value == pytest.approx(0.03857, rel=1e-3)  # binom test 10 of 12 at p = 0.5


def test_exposure_scales_the_ratio():
    r = compare_rates(4, 30.0, 4, 60.0)
    assert r.ratio == pytest.approx(2.0) and r.ci_low < 2.0 < r.ci_high


def test_zero_counts():
    none = compare_rates(0, 6.0, 0, 6.0)
    assert none.ratio is None and none.p_value == 1.0 and "no events in either" in rate_sentence(none)
    only_b = compare_rates(0, 6.0, 3, 6.0)
    assert only_b.ratio == 0.0 and only_b.ci_low == 0.0 and math.isfinite(only_b.ci_high)
    only_a = compare_rates(3, 6.0, 0, 6.0)
    assert math.isinf(only_a.ratio) and math.isinf(only_a.ci_high) and "∞" in rate_sentence(only_a)
    with pytest.raises(ValueError):
        compare_rates(1, 0.0, 1, 1.0)
