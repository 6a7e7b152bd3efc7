"""Boots as a level (stats.levels): the variance at each level, the verdict with the boot as the unit, the
advice on where more repetitions help, and no claim with one boot per side. Pure and fast (< 1 s)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairmark.stats.levels import advice, differ_by_unit, levels, unit_test
from fairmark.verdict.compare import advice_words
from fairmark.verdict.judge import Pair, judge


def nested(means, trials=(-1.0, 0.0, 1.0), tag="a"):
    """Exact data: boot i's trials are means[i] + trials."""
    values = [m + t for m in means for t in trials]
    units = [f"{tag}{i}" for i, _ in enumerate(means) for _ in trials]
    return values, units


def test_variance_components_are_the_method_of_moments_per_side_on_the_tests_scale():
    a, ua = nested([10.0, 14.0])
    b, ub = nested([12.0, 16.0], tag="b")
    lv = levels(a, ua, b, ub)
    assert lv.scale == "log" and lv.unit_means_baseline == (10.0, 14.0) and lv.trials_per_unit == 3
    for side, means in ((lv.baseline, (10.0, 14.0)), (lv.other, (12.0, 16.0))):
        logs = [
            np.log([m - 1, m, m + 1]) for m in means
        ]  # each side's own one-way analysis of the logarithms
        msw = float(np.mean([g.var(ddof=1) for g in logs]))
        msb = 3 * float(np.var([g.mean() for g in logs], ddof=1))
        assert side.sd_trial == pytest.approx(math.sqrt(msw))
        assert side.sd_unit == pytest.approx(math.sqrt((msb - msw) / 3))  # less the trials' share σ²/m
        assert side.share == pytest.approx(1 - msw / msb)
    test = unit_test(lv, confidence=95)
    assert test.design == "boots as the unit" and test.scale == "log"  # on the log boot means
    assert test.parts == "Welch and the nested model"  # both must reject; the interval is the union
    la, lb = np.log([10.0, 14.0]), np.log([12.0, 16.0])
    assert test.se >= math.sqrt(la.var(ddof=1) / 2 + lb.var(ddof=1) / 2) - 1e-12  # at least Welch's
    adv = advice(lv)
    assert advice_words(adv) == "more boots" and adv.se_more_units < adv.se_more_trials
    assert adv.to_dict()["se_twice_the_boots"] == adv.se_more_units  # the JSON's names


def test_trials_noisy_boots_alike_advise_more_trials_per_boot():
    a, ua = nested([10.0, 10.0], trials=(-5.0, 5.0))
    b, ub = nested([10.0, 10.0], trials=(-5.0, 5.0), tag="b")
    lv = levels(a, ua, b, ub)
    assert lv.baseline.sd_unit == 0.0 and lv.other.sd_unit == 0.0
    assert advice_words(advice(lv)) == "more trials per boot"
    assert advice(lv, cost_unit_s=20, cost_trial_s=1) is not None


def test_one_boot_per_side_has_no_unit_test_and_the_judge_claims_nothing():
    a, ua = nested([10.0])
    b, ub = nested([20.0], tag="b")  # a "100% change" that one boot offset could make
    assert unit_test(levels(a, ua, b, ub), confidence=95) is None
    (j,) = judge([Pair(a, b, units=(ua, ub))])
    assert not j.significant and j.comparison.change == "none" and math.isnan(j.comparison.p_value)
    assert j.to_dict()["p_value"] is None and j.to_dict()["levels"]["within_lower_bound"]["significant"]


def test_routing_only_when_the_sides_were_measured_in_different_units():
    # units differ as soon as the sides were not measured in the same set of them: B's boot y is an offset A
    # never saw, so the boot is the unit (1 vs 2 boots)
    assert differ_by_unit(["x", "x"], ["y"]) and differ_by_unit(["x"], ["x", "y"])
    assert not differ_by_unit(["x", "y"], ["y", "x"])
    assert not differ_by_unit([None], ["y"]) and not differ_by_unit(None, ["y"])
    a, ua = nested([10.0, 11.0])
    (same_boot,) = judge([Pair(a, [v + 0.5 for v in a], units=(ua, ua))])
    assert same_boot.comparison.levels is None  # one boot, both variants: the ordinary verdict


def test_a_real_kernel_effect_beyond_the_boot_spread_is_found():
    rng = np.random.default_rng(7)
    a, ua = nested(list(100 + rng.normal(0, 1, 4)))
    b, ub = nested(list(120 + rng.normal(0, 1, 4)), tag="b")
    (j,) = judge([Pair(a, b, units=(ua, ub))])
    assert j.significant and j.comparison.change == "worse" and j.comparison.design == "boots as the unit"
    assert 1.15 < j.comparison.ratio_ci_low < j.comparison.ratio < j.comparison.ratio_ci_high < 1.25


def test_one_unit_against_several_with_equal_trials_is_the_exact_pooled_t_on_the_unit_means():
    """3 runs × 3 trials against one run: the nested model is the pooled t on the 4 unit means (df 2), exact under
    its model, also when the units happen to agree more than their trials explain (σ_unit² estimated < 0). The
    estimate cut at 0 with the trials' df gave 6.0% false positives in that design."""
    from scipy import stats

    rng = np.random.default_rng(5)
    for _ in range(20):
        means = 100 * np.exp(0.005 * rng.standard_normal(4))
        # trials vary more than the units; the single run's no more than the others' (else its own spread counts)
        spread = np.exp(np.array([[0.03], [0.03], [0.03], [0.01]]) * rng.standard_normal((4, 3)))
        groups = [m * s for m, s in zip(means, spread, strict=True)]
        a, ua = [v for g in groups[:3] for v in g], [f"a{i}" for i in range(3) for _ in range(3)]
        b, ub = list(groups[3]), ["b"] * 3
        test = unit_test(levels(a, ua, b, ub, "run"), confidence=95)
        la = np.array([np.log(g).mean() for g in groups[:3]])
        lb = float(np.log(groups[3]).mean())
        t = (lb - la.mean()) / (la.std(ddof=1) * math.sqrt(1 + 1 / 3))
        assert test.p_value == pytest.approx(2 * stats.t.sf(abs(t), 2), rel=1e-6)


def test_a_single_unit_with_noisier_trials_is_judged_by_its_own_spread():
    """`check` of one run whose trials vary 10× more (CV 5%) than the 10 baseline runs' (CV 0.5%): the run's mean
    varies by its own σ_trial²/m. With σ_trial pooled over both sides 15% of such A/A checks were 'different'."""
    rng = np.random.default_rng(23)
    claimed = 0
    for _ in range(300):
        a = [
            100 * (1 + 0.01 * rng.standard_normal()) * (1 + 0.005 * rng.standard_normal(15))
            for _ in range(10)
        ]
        b = 100 * (1 + 0.01 * rng.standard_normal()) * (1 + 0.05 * rng.standard_normal(15))
        ua = [f"a{i}" for i in range(10) for _ in range(15)]
        test = unit_test(levels(np.concatenate(a), ua, b, ["b"] * 15, "run"), confidence=95)
        claimed += test.significant
    assert claimed <= 0.08 * 300, claimed


def _side(rng, k, m, sd_unit, sd_trial, tag, shift=0.0):
    values = [
        v for _ in range(k) for v in np.exp(1.0 + shift + rng.normal(0, sd_unit) + rng.normal(0, sd_trial, m))
    ]
    return values, [f"{tag}{i}" for i in range(k) for _ in range(m)]


def test_welch_on_two_units_against_six_uses_the_corrected_level_not_satterthwaites_df():
    """2 vs 6 boots, A's boots 10 times as spread: Satterthwaite's df at 5% rejects up to 9.0% of A/A comparisons
    (its variance on 1 df is often small, which makes both t and the df large). The Welch part's t is the t at the
    level α′ of stats.levels.small_alpha on Satterthwaite's df (scipy), and its df the one whose 97.5% quantile
    that t is; the interval and the detectable change are that part's."""
    from scipy import stats

    from fairmark.stats.levels import small_alpha

    rng = np.random.default_rng(11)
    (a, ua), (b, ub) = _side(rng, 2, 8, 0.05, 0.01, "a"), _side(rng, 6, 8, 0.005, 0.01, "b")
    lv = levels(a, ua, b, ub)
    test = unit_test(lv, confidence=95)
    xa = np.array([np.log(g).mean() for g in lv.groups_baseline])
    xb = np.array([np.log(g).mean() for g in lv.groups_other])
    va, vb = xa.var(ddof=1) / 2, xb.var(ddof=1) / 6
    df = (va + vb) ** 2 / (va**2 / 1 + vb**2 / 5)
    assert test.parts == "Welch and the nested model" and test.se == pytest.approx(math.sqrt(va + vb))
    alpha = small_alpha(2, 6)
    assert 0 < alpha < 0.05
    assert test.t_quantile == pytest.approx(stats.t.ppf(1 - alpha / 2, df), rel=1e-6)
    assert test.t_quantile == pytest.approx(stats.t.ppf(0.975, test.df), rel=1e-6) and test.df < df
    assert test.p_value == pytest.approx(
        2 * stats.t.sf(abs(xb.mean() - xa.mean()) / test.se, test.df), rel=1e-6
    )
    half = test.t_quantile * test.se
    assert test.ratio_ci_low == pytest.approx(math.exp(xb.mean() - xa.mean() - half), rel=1e-9)


def test_the_corrected_level_keeps_five_percent_at_the_worst_spread_ratio():
    """An independent check of the table's entries (scipy, coarse quadrature over both sample variances): the
    verdict's two parts at α′ reject at most 5% at the worst ratio of the sides' spreads, where Satterthwaite's
    df at 5% rejects 6.4% (2 vs 2) to 9.0% (2 vs 6)."""

    from fairmark.stats.levels import small_alpha

    def rate(n1: int, n2: int, alpha: float, theta: float) -> float:
        return _aa_rate(n1, n2, alpha, theta, 0.05)

    for n1, n2, before in ((2, 2, 0.063), (2, 6, 0.088), (3, 8, 0.06)):
        thetas = (0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
        assert max(rate(n1, n2, 0.05, th) for th in thetas) > before
        assert max(rate(n1, n2, small_alpha(n1, n2), th) for th in thetas) <= 0.0505


def test_two_noisy_boots_against_six_quiet_ones_keep_the_level():
    """A seeded A/A simulation of the breach (docs/statistics.md, bench/boots_unequal.py): 2 vs 6 boots, A's
    boots 10 times as spread. Satterthwaite's df claimed 8–9%; the corrected level about 4%."""
    rng = np.random.default_rng(2026)
    claimed = 0
    for _ in range(800):
        (a, ua), (b, ub) = _side(rng, 2, 8, 0.05, 0.01, "a"), _side(rng, 6, 8, 0.005, 0.01, "b")
        test = unit_test(levels(a, ua, b, ub), confidence=95)
        claimed += test.significant
    assert claimed <= 0.06 * 800, claimed


def test_without_trials_inside_the_units_welch_takes_hsus_df():
    """One value per unit: no nested part to guard Welch's df, so the conservative min(na, nb) − 1."""
    a, ua = [10.0, 12.5], ["a0", "a1"]
    b, ub = [11.0, 11.2, 10.9, 11.1, 11.3, 10.8], [f"b{i}" for i in range(6)]
    test = unit_test(levels(a, ua, b, ub), confidence=95)
    assert test.parts == "" and test.df == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("confidence", "few", "many"),
    [(90.0, 2, 6), (99.0, 3, 8), (99.0, 2, 3), (80.0, 2, 6), (98.0, 3, 8), (99.5, 4, 8)],
)
def test_at_other_levels_two_to_five_units_take_the_corrected_level_not_hsus_df(confidence, few, many):
    """At 90% and 99% a side of 2–5 units fell back to Hsu's df (min(na, nb) − 1): at 3 standard errors and equal
    spreads 2 vs 6 boots at 90% detected 16.7% where α′ detects 46.1%, 3 vs 8 at 99% 0.8% where α′ detects 12.2%
    (bench/welch_small_units.py --power); at 80%, 98% and 99.5% until the tables held them too (98%, 3 vs 8:
    5.5% → 24.0%). Now Welch's part tests at the α′ of stats/small_alpha.json at that confidence, on
    Satterthwaite's df (as at 95%)."""
    from scipy import stats

    from fairmark.stats.levels import small_alpha

    rng = np.random.default_rng(11)
    (a, ua), (b, ub) = _side(rng, few, 8, 0.05, 0.01, "a"), _side(rng, many, 8, 0.005, 0.01, "b")
    lv = levels(a, ua, b, ub)
    test = unit_test(lv, confidence=confidence)
    xa = np.array([np.log(g).mean() for g in lv.groups_baseline])
    xb = np.array([np.log(g).mean() for g in lv.groups_other])
    va, vb = xa.var(ddof=1) / few, xb.var(ddof=1) / many
    df = (va + vb) ** 2 / (va**2 / (few - 1) + vb**2 / (many - 1))
    alpha = small_alpha(few, many, confidence)
    assert 0 < alpha < 1 - confidence / 100
    assert test.t_quantile == pytest.approx(stats.t.ppf(1 - alpha / 2, df), rel=1e-6)
    tail = (1 - confidence / 100) / 2
    assert test.t_quantile == pytest.approx(stats.t.ppf(1 - tail, test.df), rel=1e-6) and test.df < df


def test_where_no_corrected_level_keeps_99_percent_welch_takes_hsus_df():
    """At 99%, 2 units against 5 or more: a 2-unit side whose variance on 1 df comes out small makes both parts
    reject whatever α′ (the quadrature finds none that keeps 1%): Hsu's df, as before."""
    from scipy import stats

    from fairmark.stats.levels import small_alpha

    assert small_alpha(2, 6, 99.0) == 0 and small_alpha(2, 7, 99.0) == 0
    rng = np.random.default_rng(11)
    (a, ua), (b, ub) = _side(rng, 2, 8, 0.05, 0.01, "a"), _side(rng, 6, 8, 0.005, 0.01, "b")
    test = unit_test(levels(a, ua, b, ub), confidence=99.0)
    assert test.t_quantile == pytest.approx(stats.t.ppf(0.995, 1.0), rel=1e-6), test


def test_small_alpha_is_computed_at_every_count_up_to_twelve():
    """The level dips between the old table's columns (95%, 5 vs 10: 4.531%, below both 5 vs 8 and 5 vs 12 at
    4.551%, the α′ the smaller-of-the-two rule took there): every count up to 12 is computed, and above 12, where
    α′ only rises with the larger side, the lower column's α′ is below the level between."""
    from fairmark.stats.levels import small_alpha, small_alpha_table

    assert small_alpha(5, 10, 95.0) == pytest.approx(0.0453125)
    for conf in (80.0, 90.0, 95.0, 98.0, 99.0, 99.5):  # every level a plan may take (plan.model)
        table = small_alpha_table(conf)
        assert table is not None
        for few in range(2, 6):
            assert all((few, m) in table for m in range(few, 13))
            rising = [table[few, m] for m in (12, 14, 16, 20, 25, 30, 40, 60, 100)]
            assert rising == sorted(rising), (conf, few, rising)
            assert small_alpha(few, 50, conf) == table[few, 40]
    assert small_alpha_table(97.0) is None  # `compare --confidence 97`: Hsu's df


@pytest.mark.parametrize(
    ("confidence", "pairs"),
    [
        (90.0, ((2, 2), (2, 6), (2, 7), (3, 8), (5, 40))),
        (99.0, ((2, 2), (2, 3), (3, 3), (3, 8), (5, 40))),
        (80.0, ((2, 2), (2, 6), (3, 8), (5, 40), (2, 100))),
        (98.0, ((2, 2), (2, 6), (3, 3), (3, 8), (5, 40))),
        (99.5, ((2, 2), (2, 3), (3, 3), (3, 8), (4, 8), (5, 40))),
    ],
)
def test_the_corrected_level_keeps_the_nominal_rate_at_the_other_levels(confidence, pairs):
    """The table's α′ at 80, 90, 98, 99 and 99.5% (bench/welch_small_units.py --grid), checked as at 95% by an
    independent coarse quadrature (scipy): the verdict's two parts reject at most the nominal share (20% … 0.5%)
    at the worst ratio of spreads."""

    from fairmark.stats.levels import small_alpha

    nominal = 1 - confidence / 100

    def rate(n1: int, n2: int, alpha: float, theta: float) -> float:
        return _aa_rate(n1, n2, alpha, theta, nominal)

    thetas = (0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
    for n1, n2 in pairs:
        assert max(rate(n1, n2, small_alpha(n1, n2, confidence), th) for th in thetas) <= nominal * 1.01


def _aa_rate(n1: int, n2: int, alpha: float, theta: float, nominal: float) -> float:
    """The verdict's two parts' A/A rejection rate by coarse quadrature over both sample variances (scipy):
    Welch's t at α on Satterthwaite's df AND the pooled t at the nominal level, the sides' variances θ and 1 − θ."""
    from scipy import stats

    u = (np.arange(80) + 0.5) / 80
    q1, q2 = np.meshgrid(*(stats.chi2.ppf(u, n - 1) / (n - 1) for n in (n1, n2)), indexing="ij")
    v1, v2 = theta * q1, (1 - theta) * q2
    df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    c = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(v1 + v2)
    sp2 = ((n1 - 1) * n1 * theta * q1 + (n2 - 1) * n2 * (1 - theta) * q2) / (n1 + n2 - 2)
    c = np.maximum(c, stats.t.ppf(1 - nominal / 2, n1 + n2 - 2) * np.sqrt(sp2 * (1 / n1 + 1 / n2)))
    return float((2 * stats.norm.sf(c)).mean())
