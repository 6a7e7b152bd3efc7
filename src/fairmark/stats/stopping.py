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
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fairmark.stats.describe import as_array, exact_mean, sample_sd
from fairmark.stats.digits import format_spread
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
    stop: bool
    target_n: int | None  # rounds the group runs to (None until the first stage is complete)
    reason: str


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
    if any(len(v) < min_trials for v in values):
        return GroupStop(False, None, "first stage")
    first = tuple(tuple(v[:min_trials]) for v in values)
    need = _first_stage_need(first, confidence, target_ci_pct)
    target = max(min_trials, min(max_trials, need))
    if any(len(v) < target for v in values):
        return GroupStop(False, target, f"running to {target} trials")
    planned = f"from the first {min_trials} trials' spread, CI target ±{target_ci_pct:g}%"
    achieved = _achieved(values, confidence)
    if need > max_trials:
        return GroupStop(
            True,
            target,
            f"max_trials ({max_trials}) reached before the CI target ±{target_ci_pct:g}% (the length planned "
            f"from the first {min_trials} trials' spread is longer); the compared cells stopped together; {achieved}",
        )
    # not "precision reached": the length was planned from the first stage, and the final interval can be wider
    # than the target (it was in 45–49% of simulated runs), so the interval achieved is said beside it
    return GroupStop(
        True, target, f"planned length {target} ({planned}); the compared cells stopped together; {achieved}"
    )


def own_ci(reason: str, values: Sequence[float], confidence: float) -> str:
    """A cell's stop reason with its own CI achieved, not its group's widest ("CI achieved ±33%" was said of a
    cell at ±15% when its partner was at ±33%)."""
    head, sep, _ = reason.rpartition("; CI achieved")
    return f"{head}; {_achieved([values], confidence)}" if sep else reason


def _achieved(values: Sequence[Sequence[float]], confidence: float) -> str:
    """The widest CI half-width, in % of |mean|, the compared cells reached at their stop."""
    widest = -1.0
    for v in values:
        if len(v) < 2:
            continue
        mean, sd = _mean_sd(v)
        if mean == 0:
            continue
        widest = max(widest, 100.0 * t_quantile(confidence, len(v) - 1) * sd / math.sqrt(len(v)) / abs(mean))
    if widest < 0:
        return "CI achieved: unknown (a mean of 0)"
    return f"CI achieved ±{format_spread(widest, '%')}"  # two digits, no exponent ('±120%', not '±1.2e+02%')


FIRST_STAGE = re.compile(r"from the first (\d+) trials")


def length_was_planned(stop_reason: str | None) -> bool:
    """Whether a cell ran to the length its first stage planned (not cut at max_trials): then that stage's spread
    set the standard error the run reached, which is what the stated detectable change assumes (stats.paired)."""
    return (stop_reason or "").startswith("planned length")


def first_stage_of(stop_reason: str | None) -> int | None:
    """The first stage from which a cell's length was planned, read from its stored stop reason (this wording
    and the one before it both name it); None when the length was not chosen from the data (a fixed trial
    budget, failures = "measure", boot blocks): the verdict then takes the spread of all its rounds alone."""
    m = FIRST_STAGE.search(stop_reason or "")
    return int(m.group(1)) if m else None
