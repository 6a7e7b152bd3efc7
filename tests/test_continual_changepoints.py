"""Change points: a step is found where it is; noise alone, independent or drifting, gives none at the stated
rate; an outlier, a second step nearby or a rejected split elsewhere does not hide a step; a real history's clear
steps stay found as runs are added (bench/continual_changepoints.py prints the rates beside the peers')."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from fairmark.stats.changepoints import detect

TIGERBEETLE = Path(__file__).parent / "fixtures" / "changepoints" / "tigerbeetle.txt"


def test_step_at_12_found_there() -> None:
    """A +10% step at point 12 of 22 with 2% noise (with 3% noise it is found about 70% of the time at α 0.01:
    the price of holding the level under drift, bench/continual_changepoints.py)."""
    rng = np.random.default_rng(7)
    series = np.r_[rng.normal(100, 2, 11), rng.normal(110, 2, 11)]  # point 12 (index 11) starts the step
    (cp,) = detect(series, alpha=0.01)
    assert abs(cp.index - 11) <= 1
    assert cp.p_value <= 0.01


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_false_alarms_on_noise_within_the_level(alpha: float) -> None:
    """1000 noise-only series of 20 points at `history`'s default level (0.01) and at 0.05: the rate of series
    with any change point is at most the level plus twice its binomial standard error."""
    alarms = sum(
        bool(detect(np.random.default_rng(10_000 + i).normal(100, 3, 20), alpha=alpha)) for i in range(1000)
    )
    assert alarms / 1000 <= alpha + 2 * (alpha * (1 - alpha) / 1000) ** 0.5


def test_ten_runs_with_a_clean_step_show_it_at_the_default_level() -> None:
    """A +16% step after run 5 of 10 (1% noise): its p is the permutation floor 2/C(10,5) = 0.0079, under
    history's default α 0.01; 9 runs cannot reach it."""
    from fairmark.stats.changepoints import min_p_value, shortest_for

    rng = np.random.default_rng(16)
    for _ in range(5):
        series = np.r_[np.full(5, 100.0), np.full(5, 116.0)] * (1 + rng.normal(0, 0.01, 10))
        (cp,) = detect(series, alpha=0.01)
        assert cp.index == 5 and cp.p_value == pytest.approx(2 / math.comb(10, 5))
    assert min_p_value(10) == pytest.approx(2 / 252) and min_p_value(9) == pytest.approx(2 / 126)
    assert shortest_for(0.01) == 10 and shortest_for(0.05) == 8 and min_p_value(5) == 1.0


def test_a_newest_outlier_does_not_hide_an_older_step() -> None:
    """Issue 38 item 3: a −10% step at run 8 of 20 and a newest run ×1.3 (1% noise): the step is found, and the
    outlier is not a change point (the guard scaled by the points' rms hid the step before)."""
    rng = np.random.default_rng(38)
    for _ in range(5):
        series = np.r_[np.full(8, 100.0), np.full(12, 90.0)] * (1 + rng.normal(0, 0.01, 20))
        series[-1] *= 1.3
        assert [c.index for c in detect(series, alpha=0.01)] == [8]


def test_two_close_steps_are_both_found() -> None:
    """Issue 38 item 3: +10% at runs 6 and 13 of 20 (1% noise) — the unfound second step made the first split
    look like drift, and the search stopped with nothing."""
    rng = np.random.default_rng(6)
    for _ in range(5):
        series = np.r_[np.full(6, 100.0), np.full(7, 110.0), np.full(7, 121.0)] * (
            1 + rng.normal(0, 0.01, 20)
        )
        assert [c.index for c in detect(series, alpha=0.01)] == [6, 13]


def test_drifting_runs_hold_the_level() -> None:
    """AR(1) φ 0.6 noise, 20 and 50 runs, α 0.01: at most 2α of the series show a change point (bench, 4000 series:
    1.6% / 1.8%, issue 38's constraint; the stated α is held on independent runs)."""
    for n in (20, 50):
        alarms = 0
        for i in range(300):
            rng = np.random.default_rng(13_000 + 97 * n + i)
            z = np.zeros(n + 50)
            for t in range(1, n + 50):
                z[t] = 0.6 * z[t - 1] + 0.8 * rng.standard_normal()
            alarms += bool(detect(100 * (1 + 0.03 * z[50:]), alpha=0.01))
        assert alarms / 300 <= 0.02 + 2 * (0.02 * 0.98 / 300) ** 0.5, (n, alarms)


def test_tigerbeetle_steps_stay_found_as_runs_are_added() -> None:
    """Otava's real history: the steps at 15, 61 and 71 are found in its first 100 runs and in every longer
    prefix (before: 100 runs 15, 61, 71, 95; 145 runs 15, 71; 175 none of 61)."""
    x = np.loadtxt(TIGERBEETLE)
    for n in (100, 120, 145, 160, 175, 200, 250, 300, 365):
        found = {c.index for c in detect(x[:n], alpha=0.01)}
        assert {15, 61, 71} <= found, (n, sorted(found))


def test_shipped_null_tables_are_what_the_simulation_gives() -> None:
    """The tables in the package are the simulation's, bit for bit, for a few lengths (a change to the statistic
    without scripts/changepoint_tables.py fails here): both statistics (the Bayes factor up to 64 runs, the t
    past it), the cheap lengths of each (9999 series of 64 runs cost ten times those of 20)."""
    from fairmark.stats.changepoints import _shipped_table, simulate_null

    for n in (6, 20, 70, 102):
        np.testing.assert_array_equal(_shipped_table(n), simulate_null(n))


def test_p_values_are_the_tables_exceedances_up_to_the_largest_level() -> None:
    """p = max(p at φ 0, p at φ > 0 / drift_allowance(n)), each (1 + the null statistics at least as large) /
    (SIMULATIONS + 1), while that is at most max_alpha(), 1 past it: every p a level can be compared with is exact
    (a short segment's tails reach max_alpha() × the larger allowance), and a level above it is refused, not
    silently tested at max_alpha(). The stated α is held on independent runs; under drift, up to SHORT runs, α ×
    the allowance (SHORT_ALLOWANCE up to DESCENT_PAST runs, where no descent follows); a longer segment (the t,
    its own autocorrelation estimate) is held to α under drift too."""
    from fairmark.errors import UsageError
    from fairmark.stats import changepoints as cp

    x = np.random.default_rng(3).normal(100, 3, 30)
    t = float(cp._statistic(x[None, :])[0][0])
    tables = cp._null(30)
    assert tables.shape == (len(cp.PHI_GRID), cp.SHORT_TAIL) and cp.PHI_GRID[0] == 0.0
    ps = [(1 + int((table >= t).sum())) / (cp.SIMULATIONS + 1) for table in tables]
    want = max(ps[0], max(ps[1:]) / cp.DRIFT_ALLOWANCE)
    p, _, _ = cp._test(x)
    assert p == (want if want <= cp.max_alpha() else 1.0)
    y = x[:20] + np.r_[np.zeros(10), np.full(10, 6.0)]  # 20 runs: the short allowance, no descent
    t20 = float(cp._statistic(y[None, :])[0][0])
    ps = [(1 + int((table >= t20).sum())) / (cp.SIMULATIONS + 1) for table in cp._null(20)]
    want = max(ps[0], max(ps[1:]) / cp.SHORT_ALLOWANCE)
    assert cp.drift_allowance(20) == cp.SHORT_ALLOWANCE and cp.drift_allowance(21) == cp.DRIFT_ALLOWANCE
    assert cp._test(y)[0] == (want if want <= cp.max_alpha() else 1.0) < 1.0
    assert cp.max_alpha() == cp.TAIL / (cp.SIMULATIONS + 1) >= 0.05
    # every p × allowance up to max_alpha() is counted in the tables of SHORT runs or fewer
    assert cp.TAIL * max(cp.DRIFT_ALLOWANCE, cp.SHORT_ALLOWANCE) <= cp.SHORT_TAIL
    assert cp._null(cp.SHORT + 1).shape == (len(cp.PHI_GRID), cp.TAIL)
    assert 1 < cp.DRIFT_ALLOWANCE < 2  # issue 38's 2α under drift, with room for the search's other tests
    assert cp.DRIFT_ALLOWANCE <= cp.SHORT_ALLOWANCE < 2  # … and, with no descent, room for the tables' error
    smallest = float(tables[:, 0].max())  # the largest statistic not counted in some table: p = 1
    assert cp._p_value(smallest - 1e-9, 30) == 1.0
    largest = float(tables[:, -1].max())
    assert cp._p_value(largest + 1e-9, 30) == 1 / (cp.SIMULATIONS + 1)
    # past the shipped lengths, fewer series (simulated at first use) with the same reach
    simulations, tail = cp._simulations(cp.tabulated(max(cp.tabulated_lengths()) + 1))
    assert simulations < cp.SIMULATIONS and tail / (simulations + 1) == cp.max_alpha()
    with pytest.raises(UsageError, match="levels up to"):
        detect(x, alpha=cp.max_alpha() * 1.01)


def test_robust_scale_is_consistent_and_ignores_a_step_and_an_outlier() -> None:
    """Issue 38 item 3: the despiking filter's scale reads the noise's sd on Gaussian rows of 20 points (median
    within 3%), is less spread than the MAD of the differences it replaced (sd 0.29 on these rows), and a 10 sd
    step with a 30 sd outlier moves it by a third at most in the median row (they are among the differences left
    out; the MAD moved less but read ordinary points as outliers where it came out small)."""
    from fairmark.stats.changepoints import _scale

    x = np.random.default_rng(38).normal(0, 1, (2000, 20))
    s = _scale(x)[:, 0]
    assert abs(float(np.median(s)) - 1) < 0.03 and float(np.std(s)) < 0.25
    moved = x.copy()
    moved[:, 10:] += 10
    moved[:, 5] += 30
    assert float(np.median(_scale(moved)[:, 0] / s)) < 1.4


def test_running_median_of_five_is_the_sorted_middle() -> None:
    from fairmark.stats.changepoints import _median5

    x = np.random.default_rng(5).normal(size=(5, 1000))
    np.testing.assert_array_equal(_median5(*x), np.sort(x, axis=0)[2])


def _staircase(seed: int, sd: float) -> np.ndarray:
    x = np.r_[np.full(6, 100.0), np.full(7, 110.0), np.full(7, 121.0)]
    return x * (1 + np.random.default_rng(seed).normal(0, sd, 20))


def test_two_close_steps_in_3pct_noise_are_usually_both_found() -> None:
    """The staircase of issue 38 at its 3% noise, 100 seeded series: both steps found within a run in most of them
    (the despiked t found both in 4%: the unfound second step made the first split look like drift, and the
    drift-studentized t of 20 points had to beat φ 0.6's critical value). The short-segment statistic weighs two
    steps against drift (stats/changepoint_bayes.py)."""
    both = sum(
        all(
            any(abs(c.index - w) <= 1 for c in detect(_staircase(20_000 + i, 0.03), alpha=0.01))
            for w in (6, 13)
        )
        for i in range(100)
    )
    assert both >= 50, both


def test_a_drifting_series_fits_drift_better_than_steps() -> None:
    """The short-segment statistic is location- and scale-free (a function of the centred series' direction), and
    a wander scores below a step of the same size: the AR(1) null explains it."""
    from fairmark.stats.changepoint_bayes import statistic

    step = np.r_[np.zeros(10), np.ones(10)] + np.random.default_rng(1).normal(0, 0.3, 20)
    wander = np.cumsum(np.random.default_rng(2).normal(0, 0.3, 20))
    s, at = statistic(np.array([step, 5 + 3 * step, wander]), 3)
    assert s[0] == pytest.approx(s[1]) and at[0] == at[1] == 10
    assert s[2] < s[0]


def test_bayes_factors_match_direct_density_ratios() -> None:
    """The two-step Bayes factors in closed form (2 × 2 algebra) against the direction densities computed from the
    covariance matrix itself: |Σ|^-1/2 (z'Σ⁻¹z)^-k/2 with Σ = I + g V V' on an orthonormal basis of contrasts."""
    from fairmark.stats import changepoint_bayes as cb

    n, t1, t2 = 14, 4, 9
    x = np.random.default_rng(3).normal(size=n) + (np.arange(n) >= t1)
    q = np.linalg.qr(np.c_[np.ones(n), np.eye(n)[:, : n - 1]])[0][:, 1:]
    z = q.T @ x / np.linalg.norm(q.T @ x)
    v = q.T @ np.c_[np.arange(n) >= t1, np.arange(n) >= t2].astype(float)
    a = z @ v
    got = cb._two_steps(
        a[:1, None],
        a[1:, None],
        *(np.array([t * (n - u) / n]) for t, u in [(t1, t1), (t2, t2), (t1, t2)]),
        n - 1,
    )
    for i, g in enumerate(cb.G_PRIOR):
        sigma = np.eye(n - 1) + g * v @ v.T
        direct = -0.5 * np.linalg.slogdet(sigma)[1] - (n - 1) / 2 * np.log(z @ np.linalg.solve(sigma, z))
        assert got[0, i, 0] == pytest.approx(direct, rel=1e-12)
