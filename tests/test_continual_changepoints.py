"""e-divisive means: a step is found where it is, with its size; noise alone gives none at the stated rate."""

from __future__ import annotations

import numpy as np
import pytest

from fairmark.stats.changepoints import e_divisive


def test_step_at_12_found_there() -> None:
    rng = np.random.default_rng(7)
    series = np.r_[rng.normal(100, 3, 11), rng.normal(110, 3, 11)]  # point 12 (index 11) starts the step
    (cp,) = e_divisive(series, alpha=0.01)
    assert abs(cp.index - 11) <= 1
    assert cp.p_value <= 0.01


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_false_alarms_on_noise_within_the_level(alpha: float) -> None:
    """1000 noise-only series of 20 points at `history`'s default level (0.01) and at 0.05: the rate of series
    with any change point is at most the level plus twice its binomial standard error (bench/
    continual_changepoints.py prints the rates with their exact CIs, and the other libraries' on the same series)."""
    alarms = sum(
        bool(e_divisive(np.random.default_rng(10_000 + i).normal(100, 3, 20), alpha=alpha, seed=i))
        for i in range(1000)
    )
    assert alarms / 1000 <= alpha + 2 * (alpha * (1 - alpha) / 1000) ** 0.5


@pytest.mark.parametrize("n", [6, 7, 8])
def test_exact_p_value_is_the_share_of_all_orderings(n: int) -> None:
    """The counted p-value of a short series equals the share of its n! orderings, listed one by one, whose
    best split reaches the observed statistic."""
    import itertools
    import math

    from fairmark.stats.changepoints import _best_split, _exact_p_value, _q_stats

    x = np.random.default_rng(n).normal(0, 1, n) + np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    split = _best_split(x)
    assert split is not None
    observed = split[1]
    listed = np.array(list(itertools.permutations(x)))
    reach = np.sum(_q_stats(listed).max(axis=1) >= observed - 1e-12 * abs(observed))
    assert _exact_p_value(x, observed) == pytest.approx(reach / math.factorial(n), rel=1e-12)


def test_ten_runs_with_a_clean_step_show_it_at_the_default_level() -> None:
    """A +16% step after run 5 of 10 (1% noise): its exact p is 2/C(10,5) = 0.0079, under history's default α
    0.01, whatever the seed of the sampled tests."""
    import math

    from fairmark.stats.changepoints import min_p_value, shortest_for

    rng = np.random.default_rng(16)
    for seed in range(5):
        series = np.r_[np.full(5, 100.0), np.full(5, 116.0)] * (1 + rng.normal(0, 0.01, 10))
        (cp,) = e_divisive(series, alpha=0.01, seed=seed)
        assert cp.index == 5 and cp.p_value == pytest.approx(2 / math.comb(10, 5))
    assert min_p_value(10) == pytest.approx(2 / 252) and min_p_value(9) == pytest.approx(2 / 126)
    assert shortest_for(0.01) == 10 and shortest_for(0.05) == 8 and min_p_value(5) == 1.0
