"""Adaptive stopping by precision: never because an A/B test turned significant (re-running until significant
manufactures results), and never one cell alone.

Cells that are compared with each other (same workload, same sweep point) stop together, so every round holds
every side to the end and drift in a tail cannot land on one variant. How many rounds they run is decided once,
from the first stage: after `min_trials` rounds, each cell's ideal n for the precision target is computed from its
first `min_trials` values, and the group runs to the largest of them (within `max_trials`). Stopping later on
whether precision "is reached" would look at the data again and again and stop on a lucky low-variance stretch
(simulated A/A: 6.2% false positives at 95%); a target fixed by the first stage does not, when the verdict takes
its spread from that first stage too (Stein's two-stage design; see stats.paired).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fairmark.stats.describe import as_array, exact_mean, sample_sd
from fairmark.stats.tdist import t_quantile

MIN_TRIALS = 3  # ministat's floor: no CI is trusted below it
MAX_IDEAL_N = 100_000


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and stddev (n − 1) without a full summary: the stopping rule runs after every round."""
    x = as_array(values)
    return exact_mean(x), sample_sd(x)  # equal values: exactly their value and no spread


def precision_reached(values: Sequence[float], *, confidence: float, target_ci_pct: float) -> bool:
    """True when n ≥ 3 and the CI half-width is ≤ target_ci_pct % of |mean|."""
    if len(values) < MIN_TRIALS:
        return False
    mean, sd = _mean_sd(values)
    if mean == 0:
        return sd == 0
    half = t_quantile(confidence, len(values) - 1) * sd / math.sqrt(len(values))
    return bool(half <= target_ci_pct / 100.0 * abs(mean))


def _enough(n: int, cv: float, p: float, confidence: float) -> bool:
    return t_quantile(confidence, n - 1) * cv / math.sqrt(n) <= p


def ideal_n(values: Sequence[float], *, confidence: float, target_ci_pct: float) -> int:
    """The smallest n (≥ 3) whose CI half-width t(n−1)·cv/√n is within the target, at the CV seen so far.

    t(n−1)/√n falls with n, so a bisection finds it. It is an estimate from the spread seen so far (it can be
    below the current n when precision is already reached). With fewer than 2 values or a zero mean there is no
    estimate: the current n (at least 3) is returned, so the display shows no guess rather than a wrong one.
    """
    n_now = len(values)
    if n_now < 2:
        return max(n_now, MIN_TRIALS)
    mean, sd = _mean_sd(values)
    if mean == 0 or target_ci_pct <= 0:
        return n_now
    cv = sd / abs(mean)
    if cv == 0:
        return MIN_TRIALS
    p = target_ci_pct / 100.0
    low, high = MIN_TRIALS, MAX_IDEAL_N
    if _enough(low, cv, p, confidence):
        return low
    while high - low > 1:  # invariant: low is not enough, high is (or is the cap)
        mid = (low + high) // 2
        low, high = (low, mid) if _enough(mid, cv, p, confidence) else (mid, high)
    return high


@dataclass(frozen=True)
class GroupStop:
    """Where a group of compared cells stands (store/stopreason.py words it as the reason a cell stores)."""

    stop: bool
    target_n: int | None  # rounds the group runs to (None until the first stage is complete)
    state: Literal["first_stage", "running", "max_trials", "planned"]
    min_trials: int  # the first stage, in rounds
    max_trials: int
    target_ci_pct: float
    widest_ci_pct: float | None = (
        None  # at the stop: the widest CI half-width reached, % of |mean| (None: a mean 0)
    )


def group_need(first_stage: Sequence[Sequence[float]], *, confidence: float, target_ci_pct: float) -> int:
    """The trials the first stage's spread asks for: the largest ideal n of the group's cells. A function of the
    first stage alone, so it is the same on resume."""
    return max(
        (ideal_n(v, confidence=confidence, target_ci_pct=target_ci_pct) for v in first_stage), default=0
    )


@functools.lru_cache(maxsize=256)
def _first_stage_need(
    first_stage: tuple[tuple[float, ...], ...], confidence: float, target_ci_pct: float
) -> int:
    """`group_need`, remembered: the runner asks after every round and the first stage no longer changes once
    complete — its bisection over t quantiles took ~90 µs a round, more than a short trial's whole record."""
    return group_need(first_stage, confidence=confidence, target_ci_pct=target_ci_pct)


def group_stop(
    values: Sequence[Sequence[float]],
    *,
    confidence: float,
    target_ci_pct: float,
    min_trials: int,
    max_trials: int,
) -> GroupStop:
    """Whether a group of compared cells (each cell's ok values in trial order) stops now: all together, once
    every cell has the group's target n — the first stage's need within [min_trials, max_trials]. Before every
    cell has `min_trials` values nothing is decided."""
    stage = (min_trials, max_trials, target_ci_pct)
    if any(len(v) < min_trials for v in values):
        return GroupStop(False, None, "first_stage", *stage)
    first = tuple(tuple(v[:min_trials]) for v in values)
    need = _first_stage_need(first, confidence, target_ci_pct)
    target = max(min_trials, min(max_trials, need))
    if any(len(v) < target for v in values):
        return GroupStop(False, target, "running", *stage)
    # not "precision reached": the length was planned from the first stage, and the final interval can be wider
    # than the target (it was in 45–49% of simulated runs), so the interval achieved is said beside it
    state: Literal["max_trials", "planned"] = "max_trials" if need > max_trials else "planned"
    return GroupStop(True, target, state, *stage, widest_ci_pct(values, confidence))


def widest_ci_pct(values: Sequence[Sequence[float]], confidence: float) -> float | None:
    """The widest CI half-width, in % of |mean|, the compared cells reached at their stop (None: every mean 0)."""
    widest = -1.0
    for v in values:
        if len(v) < 2:
            continue
        mean, sd = _mean_sd(v)
        if mean == 0:
            continue
        widest = max(widest, 100.0 * t_quantile(confidence, len(v) - 1) * sd / math.sqrt(len(v)) / abs(mean))
    return widest if widest >= 0 else None


@dataclass(frozen=True)
class Capped:
    """Cells cut at max_trials (their first stage asked for more rounds): the stopping rule they ran under, which
    a repeat of them runs under too (the MDE of such a run simulates that repeat: stats.power.capped_factor)."""

    max_trials: int
    target_ci_pct: float
