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
