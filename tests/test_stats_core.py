"""describe / compare / stopping / digits / checks / FDR: behaviour on known vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairmark.errors import InputError, UsageError
from fairmark.report.samples import sample_warnings
from fairmark.stats import (
    benjamini_hochberg,
    bh_adjust,
    describe,
    format_percent,
    format_value,
    ideal_n,
    ministat_median,
    outlier_indices,
    precision_reached,
)
from fairmark.verdict.compare import compare

IGUANA = [50, 200, 150, 400, 750, 400, 150]
CHAMELEON = [150, 400, 720, 500, 930]


def test_describe_manual_vector():
    s = describe(IGUANA)
    assert (s.n, s.min, s.max, s.median, s.mean) == (7, 50, 750, 200, 300)
    assert s.stddev == pytest.approx(238.04761, abs=1e-5)
    assert s.cv == pytest.approx(238.04761 / 300, rel=1e-6)
    # t(6, 95%) from ministat's table is 2.447
    assert s.ci_half_width == pytest.approx(2.447 * s.stddev / math.sqrt(7))
    assert s.ci_low == pytest.approx(300 - s.ci_half_width)
    assert describe(CHAMELEON).stddev == pytest.approx(299.08193, abs=1e-5)


def test_describe_edge_cases():
    one = describe([5.0])
    assert one.n == 1 and math.isnan(one.stddev) and math.isnan(one.cv) and math.isnan(one.ci_half_width)
    assert math.isnan(describe([0.0, 0.0, 0.0]).cv)
    with pytest.raises(InputError):
        describe([])
    with pytest.raises(InputError, match="not a finite number"):
        describe([1.0, float("nan"), 2.0])
    assert describe([1, 2, 3, 10]).median == 2.5
    assert ministat_median([1, 2, 3, 10]) == 3  # what ministat 20150715 prints


def test_compare_manual_vector_at_80_and_95():
    c80 = compare(IGUANA, CHAMELEON, confidence=80)
    assert c80.difference == 240
    assert f"{c80.half_width:g}" == "212.215"
    assert f"{c80.pooled_stddev:g}" == "264.159"
    assert f"{c80.percent:g}% +/- {c80.percent_half_width:g}%" == "80% +/- 70.7384%"
    assert c80.significant and c80.change == "worse"
    c95 = compare(IGUANA, CHAMELEON)
    assert not c95.significant and c95.change == "none"
    assert "no difference proven at 95% confidence" in c95.sentence
    assert "identical" not in c95.sentence
    assert any("only 5 values" in w for w in c95.warnings)


def test_compare_fields_and_json():
    c = compare([10, 10.2, 9.9, 10.1, 10.05, 9.95], [9, 9.1, 8.9, 9.05, 8.95, 9.0], unit="s")
    d = c.to_dict()
    keys = "difference half_width percent percent_half_width pooled_stddev significant confidence welch"
    keys += " mann_whitney sentence p_value df t_quantile change warnings"
    assert set(keys.split()) <= set(d)
    assert d["welch"]["ratio"] == pytest.approx(c.mean_other / c.mean_baseline)
    assert d["welch"]["ratio_ci_low"] < d["welch"]["ratio"] < d["welch"]["ratio_ci_high"]
    assert c.sentence == "B is faster than A: -10.3% (95% CI: -11.4% to -9.2%)"
    assert c.change == "better" and c.p_value < 1e-6 and c.mann_whitney["significant"]


@pytest.mark.parametrize(
    ("better", "unit", "expect"),
    [
        ("higher", "MB/s", "B is higher (better) than A: +9.6% (95% CI: +7.5% to +11.7%)"),
        ("lower", "MB/s", "B is higher (worse) than A: +9.6% (95% CI: +7.5% to +11.7%)"),
        ("lower", "s", "B is slower than A: +9.6% (95% CI: +7.5% to +11.7%)"),
    ],
)
def test_sentence_direction(better, unit, expect):
    c = compare([100, 102, 99, 101], [110, 111, 109, 110.5], better=better, unit=unit)
    assert c.sentence == expect


def test_not_significant_sentence_gives_bound():
    c = compare([10, 10.2, 9.9, 10.1, 10.05, 9.95], [10, 10.1, 9.9, 10.05, 9.95, 10.0], unit="s")
    # not "a change beyond ±e would have shown" (a change of exactly e is seen half the time): 80% power
    assert c.sentence == (
        "B vs A: no difference proven at 95% confidence, observed -0.33% (95% CI: -1.5% to +0.87%); "
        "this run would detect a change of ±1.9% with 80% power"
    )


@pytest.mark.slow
def test_welch_ratio_ci_contains_true_ratio_for_10pct_more_work():
    import numpy as np

    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        a = rng.normal(100, 3, 10)
        b = rng.normal(110, 6, 12)
        w = compare(a, b, unit="s").welch
        hits += w["ratio_ci_low"] <= 1.1 <= w["ratio_ci_high"]
    assert hits >= 180  # 95% nominal coverage; 200 draws


def test_compare_refuses_bad_input():
    with pytest.raises(InputError):
        compare([1.0], [1.0, 2.0, 3.0])
    with pytest.raises(UsageError):
        compare([1, 2, 3], [1, 2, 3], better="faster")
    with pytest.raises(UsageError):
        compare([1, 2, 3], [1, 2, 3], confidence=100)


def test_zero_spread():
    # ministat says "Difference" (e = 0); fairmark never proves anything from zero variance: the rank test decides
    c = compare([5, 5, 5], [6, 6, 6])
    assert c.ministat_significant and c.half_width == 0
    assert not c.significant and c.constant and c.mann_whitney["p_value"] == pytest.approx(0.1)
    assert "no spread, so no t test and no interval" in c.sentence
    assert any("zero spread" in w for w in c.warnings)
    same = compare([5, 5, 5], [5, 5, 5])
    assert not same.significant and same.mann_whitney["p_value"] == 1.0


def test_student_and_mann_whitney_disagreement_is_warned():
    # every B value is above every A value (ranks: a clear difference), but one huge B value inflates the
    # variance so much that Welch's t (even on the logarithms) proves nothing; 7 values a side: too few for
    # the robust rule (stats.robust.MIN_N), so Welch's verdict stands and the disagreement is said
    c = compare([10, 11, 12, 13, 14, 15, 16], [18, 19, 20, 21, 22, 23, 600])
    assert not c.significant and c.mann_whitney["significant"] and c.design == "Welch"
    assert any("disagree (only Mann-Whitney U finds a difference" in w for w in c.warnings)


def test_an_outlier_makes_the_verdict_yuens():
    # the same shape with 8 values a side: the outlier is flagged, and Yuen's t on trimmed means decides
    c = compare([10, 11, 12, 13, 14, 15, 16, 17], [18, 19, 20, 21, 22, 23, 24, 600])
    assert c.significant and c.design == "Yuen's t, 20% trimmed" and c.mann_whitney["significant"]
    assert not any("disagree" in w for w in c.warnings)
    (note,) = [w for w in c.warnings if w.startswith("decided by")]
    assert "outliers flagged in B" in note and "Welch's t alone: +140%" in note
    # the estimate is the one Yuen's test decided on: the ratio of the trimmed geometric means
    # (8 values: floor(0.2·8) = 1 off each end)
    trimmed_a, trimmed_b = np.log([11, 12, 13, 14, 15, 16]).mean(), np.log([19, 20, 21, 22, 23, 24]).mean()
    assert c.ratio == pytest.approx(math.exp(trimmed_b - trimmed_a))
    assert c.ratio_ci_low > 1 and "Yuen's t, 20% trimmed" in c.sentence


def test_yuen_matches_an_independent_computation():
    # Yuen (1974) by hand on the logarithms: 20% trimmed means, winsorized variances, Welch-type df
    from scipy import stats as st

    a = np.log([65.4, 65.5, 65.2, 65.5, 65.3, 66.0, 65.3, 70.2, 65.7, 65.6])
    b = np.log([65.4, 65.9, 66.4, 66.7, 72.1, 66.3, 66.2, 68.6, 66.3, 66.1])
    ref = st.ttest_ind(b, a, equal_var=False, trim=0.2)
    from fairmark.stats.robust import yuen

    mine = yuen(np.exp(a), np.exp(b), confidence=95.0)
    assert mine is not None
    assert mine.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert mine.difference / mine.se == pytest.approx(ref.statistic, rel=1e-9)


def test_aa_calibration_warning():
    a, b = [100, 100.2, 99.9, 100.1, 100.05, 99.95], [103, 103.2, 102.9, 103.1, 103.05, 102.95]
    assert compare(a, b).significant
    assert any("A/A run" in w for w in compare(a, b, aa_percent_half_width=4.0).warnings)
    assert not any("A/A run" in w for w in compare(a, b, aa_percent_half_width=1.0).warnings)


def test_precision_and_ideal_n():
    tight = [100.0, 100.2, 99.9, 100.1, 100.05]
    assert precision_reached(tight, confidence=95, target_ci_pct=1.0)
    assert not precision_reached(tight[:2], confidence=95, target_ci_pct=50.0)  # n < 3 never stops
    assert not precision_reached([90, 110, 100, 95, 105], confidence=95, target_ci_pct=1.0)
    n = ideal_n([90, 110, 100], confidence=95, target_ci_pct=1.0)
    cv = describe([90, 110, 100]).cv
    assert n == pytest.approx((1.96 * cv / 0.01) ** 2, rel=0.05)
    assert ideal_n([5.0], confidence=95, target_ci_pct=1) == 3


@pytest.mark.parametrize(
    ("value", "hw", "unit", "text"),
    [
        (412.567, 9, "MB/s", "413 ± 9 MB/s"),
        (412.567, 37, "MB/s", "410 ± 40 MB/s"),
        (412.567, 12, "MB/s", "413 ± 12 MB/s"),
        (412.567, 0.97, "MB/s", "412.6 ± 1.0 MB/s"),
        (0.1354, 0.0015165751, "s", "135.4 ± 1.5 ms"),  # the unit's prefix scaled to the value
        (12.34, 1.83, "%", "12.3% ± 1.8%"),
        (-0.004, 0.3, "", "0.00 ± 0.30"),
        (1234567.0, 3000, "", "1234600 ± 3000"),
        (0.123456789, None, "s", "123.5 ms"),  # no interval: 4 significant digits
        (5.28e9, 1.9e8, "B/s", "5.28 ± 0.19 GB/s"),  # issue 25 item 8: openssl's bytes/s
        (5.29855e9, None, "B/s", "5.299 GB/s"),
        (87770, 650, "KiB", "85.7 ± 0.6 MiB"),  # binary prefixes stay binary
        (1650, 40, "MB/s", "1.65 ± 0.04 GB/s"),  # a prefixed unit rescaled
        (28435.5, 310, "transactions/s", "28440 ± 310 transactions/s"),  # a count: no prefix below a million
        (5.3e6, 2e5, "ops/s", "5.30 ± 0.20 M ops/s"),
        (0.3, 0.01, "Gbit/s", "300 ± 10 Mbit/s"),
        (2500, 30, "ms", "2.500 ± 0.030 s"),  # seconds never grow into minutes
        (7200.0, 30, "s", "7200 ± 30 s"),
        (0.5, 0.01, "%", "0.500% ± 0.010%"),
    ],
)
def test_format_value(value, hw, unit, text):
    assert format_value(value, hw, unit) == text


def test_median_without_its_own_interval_takes_the_means_digits():
    from fairmark.stats import format_median

    assert format_median(28435.5, math.nan, math.nan, "transactions/s", fallback_half_width=310) == (
        "28440 transactions/s"
    )
    assert format_median(5.29855e9, math.nan, math.nan, "B/s", fallback_half_width=1.9e8) == "5.30 GB/s"
    assert format_median(5.29855e9, None, None, "B/s") == "5.299 GB/s"


def test_format_percent_signed():
    assert format_percent(12.34, 1.83, signed=True) == "+12.3% ± 1.8%"
    assert format_percent(-12.34, 1.83, signed=True) == "-12.3% ± 1.8%"


def test_outliers_flagged_not_dropped():
    values = [1, 1.1, 0.9, 1, 1.05, 0.95, 5, 1, 1.02, 0.98]
    assert outlier_indices(values) == [6]
    (sentence,) = sample_warnings(values)
    assert "#7" in sentence and "kept" in sentence


def test_drift_and_two_modes():
    assert any(w.startswith("drift: values rise") for w in sample_warnings([float(i) for i in range(20)]))
    two = [1, 1.1, 0.9, 1, 1.05, 5, 5.1, 4.9, 5, 5.05]
    assert any(w.startswith("two modes: 5 values near 1") for w in sample_warnings(two))
    from scipy.stats import norm

    # an ideal normal sample in shuffled order: no outlier, no trend, one mode
    ideal = [100 + 2 * norm.ppf((i + 0.5) / 30) for i in (7 * k % 30 for k in range(30))]
    assert sample_warnings(ideal) == []


def test_benjamini_hochberg():
    p = [0.01, 0.04, 0.03, 0.5]
    assert bh_adjust(p) == pytest.approx([0.04, 0.0533333, 0.0533333, 0.5])
    assert benjamini_hochberg(p) == [True, False, False, False]
    assert benjamini_hochberg([0.001] * 40 + [math.nan]) == [True] * 40 + [False]


def test_spread_of_samples_with_ties_says_nothing_on_stderr() -> None:
    """Bootstrap resamples of tied values have no CV; numpy's division warnings reached the terminal."""
    import warnings

    from fairmark.report.failures import spread_sentence
    from fairmark.stats.spread import compare_spread

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdict = compare_spread([1.0, 1.0, 1.0, 2.0], [1.0, 2.0, 3.0, 3.0], confidence=95.0)
    assert verdict is not None and "nan" not in spread_sentence(verdict, ("A", "B"))
