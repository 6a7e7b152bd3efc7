"""e-divisive means: a step is found where it is, with its size; noise alone gives none at the stated rate."""

from __future__ import annotations

import numpy as np

from fairmark.stats.changepoints import e_divisive


def test_step_at_12_found_there() -> None:
    rng = np.random.default_rng(7)
    series = np.r_[rng.normal(100, 3, 11), rng.normal(110, 3, 11)]  # point 12 (index 11) starts the step
    (cp,) = e_divisive(series, alpha=0.01)
    assert abs(cp.index - 11) <= 1
    assert cp.p_value <= 0.01


def test_false_alarms_on_noise_within_the_level() -> None:
    """300 noise-only series of 20 points at α = 0.05 (bench/continual_changepoints.py runs 1000 at 0.01 and
    0.05): the rate is at most the level plus twice its binomial standard error."""
    rng = np.random.default_rng(11)
    alarms = sum(
        bool(e_divisive(rng.normal(100, 3, 20), alpha=0.05, permutations=99, seed=i)) for i in range(300)
    )
    assert alarms / 300 <= 0.05 + 2 * (0.05 * 0.95 / 300) ** 0.5
