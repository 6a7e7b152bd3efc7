"""Does every verdict path hold its stated rates on the noise real machines make? (issue 23)

Each simulated case is decided by the code the command decides with, fed simulated data instead of a store:

* run      — verdict.pairs.within_run on two interleaved cells (the pairs `run`/`show`/`report` judge), the
             run's length chosen the way the runner chooses it (stats.stopping.group_stop after the first stage);
* compare  — verdict.pairs.judge_files on two files' values, as `fairmark compare` judges them;
* compare-runs — verdict.pairs.across_runs on two runs' cells (one run per side, one boot);
* --vs     — the same function on several runs per side (runs in one boot, or boots);
* check    — verdict.pairs.against_runs: a run against a tag baseline of 10 runs on the same host;
* bisect   — bisect.search.pooled_verdicts on a step's runs (candidate = good: an A/A step), with the step's
             re-runs (up to 3, pooled) until its decision rule (verdict.rule) answers;
* history  — report.history.change_points on a series of run means (e-divisive, α 0.01).

A/A cases report the rate of claimed differences (the goal: ≤ 5.5%, upper end of the 95% interval ≤ 6%); power
cases the rate of detections; "MDE" cases simulate a run at the change the previous run said it would detect
with 80% power (the goal: 77–83%). Each rate comes with its 95% Wilson interval and the number of simulations.

Run: .venv/bin/python bench/verdict_simulation.py [--sims N] [--only NAME] [--jobs J]
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pool
from types import SimpleNamespace
from typing import Any

import numpy as np

from fairmark.stats.stopping import group_stop
from fairmark.store.stopreason import precision_reason

CV = 0.02
MIN_TRIALS, MAX_TRIALS, TARGET = 6, 30, 1.0
QUICK_MIN, QUICK_MAX = 3, 6  # plan.model.QuickPolicy's defaults


# ---- noise: relative deviations for a sequence of trials ------------------------------------------------------
def normal(rng, n, cv=CV):
    return cv * rng.standard_normal(n)


def lognormal(rng, n, cv=CV):
    mean, sd = np.exp(0.125), np.sqrt((np.exp(0.25) - 1) * np.exp(0.25))  # σ 0.5: skewness 1.75
    return cv * (np.exp(0.5 * rng.standard_normal(n)) - mean) / sd


def t3(rng, n, cv=CV):
    return cv * rng.standard_t(3, n) / math.sqrt(3.0)  # t(3) has variance 3


def bimodal(rng, n, cv=CV):
    return cv * ((rng.random(n) < 0.3) * 2.0 - 0.6 + 0.45 * rng.standard_normal(n))


def ar1_drift(rng, n, cv=CV, phi=0.9):
    """A machine drifting (AR(1), φ 0.9, sd 2·cv) under both cells, plus trial noise cv/2."""
    e = rng.standard_normal(n + 100) * 2 * cv * math.sqrt(1 - phi**2)
    z = np.zeros(n + 100)
    for i in range(1, n + 100):
        z[i] = phi * z[i - 1] + e[i]
    return z[100:] + 0.5 * cv * rng.standard_normal(n)


def hiccups(rng, n, cv=CV):
    """Now and then (3% of trials) a trial 20% slower: a daemon waking up."""
    return normal(rng, n, cv) + 0.2 * (rng.random(n) < 0.03)


def slow_outliers(rng, n, cv=CV, share=0.1):
    """Go's benchmarks as benchstat sees them (issue 38): normal noise, and each value with probability 10% a
    few (5–20%) percent slow — one or two slow values in a file of 10, often none."""
    slow = rng.random(n) < share
    return (1 + normal(rng, n, cv)) * (1 + slow * rng.uniform(0.05, 0.20, n)) - 1


NOISE: dict[str, Callable[..., np.ndarray]] = {
    "normal": normal,
    "lognormal": lognormal,
    "t3": t3,
    "bimodal": bimodal,
    "ar1": ar1_drift,
    "hiccups": hiccups,
    "slow": slow_outliers,
}


# ---- one interleaved run of two cells -------------------------------------------------------------------------
@dataclass
class RunShape:
    noise: str = "normal"
    cv: float = CV
    cv_b: float | None = None  # B's own CV (unequal spreads in a run); None: B like A
    event: str = ""  # "outlier" | "step" (in the second stage) | ""
    integer: float | None = None  # values rounded to integers around this mean
    order_effect: float = (
        0.0  # decision rows: each later place inside a round this much slower (caches, heat)
    )
    min_trials: int = MIN_TRIALS
    max_trials: int = MAX_TRIALS
    target: float = TARGET


def interleaved(rng, shape: RunShape, ratio: float = 1.0) -> tuple[np.ndarray, np.ndarray, int]:
    """A's and B's values over max_trials rounds (random order inside each round, one trial sequence), and the
    rounds the run keeps: the length group_stop sets from the first stage, as the runner does. (Each round is
    shuffled on its own, as the runner did before its rounds went in twos; the precision rows' shapes have no
    order effect, so only which value an event strikes differs.)"""
    n_max = shape.max_trials
    z = NOISE[shape.noise](rng, 2 * n_max, shape.cv)
    b_first = rng.random(n_max) < 0.5
    idx_a = 2 * np.arange(n_max) + b_first  # each value's position in the trial sequence
    idx_b = 2 * np.arange(n_max) + ~b_first
    za, zb = z[idx_a], z[idx_b]
    if shape.cv_b is not None:
        zb = NOISE[shape.noise](rng, n_max, shape.cv_b)
    mean = shape.integer or 100.0
    a, b = mean * (1 + za), mean * ratio * (1 + zb)
    if shape.integer:
        a, b = np.round(a), np.round(b)
    k = shape.min_trials
    first = group_stop(
        [a[:k], b[:k]], confidence=95, target_ci_pct=shape.target, min_trials=k, max_trials=n_max
    )
    n = k if first.stop else int(first.target_n)
    if shape.event and n > k:
        at = int(rng.integers(2 * k, 2 * n))  # a trial of the second stage
        if shape.event == "outlier":  # that one trial 20% slower
            (a if rng.random() < 0.5 else b)[at // 2] *= 1.2
        elif shape.event == "step":  # a neighbour arrives: every later trial of both cells 15% slower
            a[idx_a >= at] *= 1.15
            b[idx_b >= at] *= 1.15
    return a, b, n


def cell(
    variant: str,
    values,
    rounds,
    *,
    workload="w",
    boots=None,
    stop_reason=None,
    run="run",
    host="h",
    start=None,
):
    """A cell as verdict.values gives it from the store: its record and its values, each with its labels."""
    from fairmark.plan.metric import MetricSpec
    from fairmark.store.records import CellRecord
    from fairmark.verdict.values import Labelled, MeasuredCell

    values = tuple(float(v) for v in values)
    n = len(values)
    record = CellRecord(
        f"{workload}/{variant}",
        workload,
        variant,
        (),
        "wall_s",
        (MetricSpec("wall_s", "s", "lower"),),
        status="done",
        stop_reason=stop_reason,
    )
    labelled = Labelled(
        values, tuple(rounds), (run,) * n, tuple(boots) if boots is not None else (None,) * n, (host,) * n
    )
    # --no-time-order: the verdicts as they were before issue 31 item 6 (no unit start times)
    starts = {run: float(start)} if start is not None and not os.environ.get("SIM_NO_TIME_ORDER") else {}
    return MeasuredCell(record, (), {}, {"wall_s": labelled}, starts)


def stop_reason(a, b, n, shape: RunShape) -> str:
    """The reason the runner stores when the compared cells stop (stats.stopping.group_stop at their length)."""
    return precision_reason(
        group_stop(
            [a[:n], b[:n]],
            confidence=95,
            target_ci_pct=shape.target,
            min_trials=shape.min_trials,
            max_trials=shape.max_trials,
        )
    )


def run_verdict(a, b, n, shape: RunShape) -> Any:
    """The run's verdict of B against A as `run`, `show` and `report` compute it (verdict.pairs.within_run, from
    the cells as the store gives them: values, rounds, stop reason)."""
    from fairmark.verdict.pairs import RunDesign, within_run

    r = range(n)
    why = stop_reason(a, b, n, shape)
    cells = (cell("A", a[:n], r, stop_reason=why), cell("B", b[:n], r, stop_reason=why))
    (v,) = within_run(cells, RunDesign("A", 95.0))
    return v.comparison


# ---- the cases ------------------------------------------------------------------------------------------------
def _files(a, b, unit=""):
    """Two data files judged as `fairmark compare` judges them (verdict.pairs.judge_files)."""
    from fairmark.verdict.pairs import judge_files

    return judge_files([a, b], ["A", "B"], better="lower", unit=unit, confidence=95.0, ministat_compat=False)


def case_run(shape: RunShape, ratio: float = 1.0):
    def one(rng):
        a, b, n = interleaved(rng, shape, ratio)
        return run_verdict(a, b, n, shape).significant, n  # with the trials per side the run took

    return one


def case_compare(
    n_a: int,
    n_b: int,
    *,
    noise="normal",
    cv_a=CV,
    cv_b=CV,
    ratio=1.0,
    integer=None,
    outlier=False,
    step=False,
):
    def one(rng):
        a = (integer or 100.0) * (1 + NOISE[noise](rng, n_a, cv_a))
        b = (integer or 100.0) * ratio * (1 + NOISE[noise](rng, n_b, cv_b))
        if step:  # both files from one run where a neighbour arrived: the later values of both 15% slower
            at = int(rng.integers(1, min(n_a, n_b)))
            a[at:] *= 1.15
            b[at:] *= 1.15
        if integer:
            a, b = np.round(a), np.round(b)
        if outlier:  # one value of one file 20% off
            (a if rng.random() < 0.5 else b)[0] *= 1.2
        (j,) = _files(list(a), list(b), unit="s")
        return j.comparison.significant

    return one


def _run_values(
    rng, n, offset_sd, trial_cv, factor=1.0, noise="normal", outlier=False, step=False, integer=None
):
    """One run's values: its own offset (σ offset_sd) times trial noise of the given shape; with `outlier` one
    of its trials 20% slow; with `step` every trial from a random one on 15% slower (a neighbour arrives mid-run);
    with `integer` rounded to integers around that mean."""
    values = (
        (integer or 100.0) * factor * (1 + rng.normal(0, offset_sd)) * (1 + NOISE[noise](rng, n, trial_cv))
    )
    if outlier:
        values[int(rng.integers(0, n))] *= 1.2
    if step:
        values[int(rng.integers(1, n)) :] *= 1.15
    if integer:
        values = np.round(values)
    return list(values)


def compare_runs_verdict(side_a, side_b) -> Any:
    """verdict.pairs.across_runs (what `compare-runs` judges with) on each side's runs: `side_*`: a list of
    (values, boot id, run id) per run, each value labelled with its host, boot and run."""
    from fairmark.verdict.pairs import Side, across_runs

    sides = []
    for side in (side_a, side_b):
        runs = [
            [
                cell(
                    "A",
                    r[0],
                    range(len(r[0])),
                    boots=[r[1]] * len(r[0]),
                    run=r[2],
                    start=r[3] if len(r) > 3 else None,
                )
            ]
            for r in side
        ]
        sides.append(Side(runs, side[0][2]))
    (v,) = across_runs(
        [(sides[0].runs[0][0], sides[1].runs[0][0])],
        (sides[0], sides[1]),
        (),
        all_metrics=False,
        confidence=95.0,
    )
    return v.comparison


def case_runs(
    runs_a: int,
    runs_b: int,
    *,
    run_sd,
    trial_cv=CV,
    trials=15,
    trials_b=None,
    one_boot=True,
    ratio=1.0,
    noise="normal",
    outlier=False,
    cv_b=None,
    step=False,
    integer=None,
):
    """Runs made apart: each run has its own offset (σ run_sd); all in one boot, or each run in its own boot.
    `cv_b`: side B's trial CV (unequal spreads)."""

    def one(rng):
        sides = []
        for tag, count, n, factor, cv in (
            ("a", runs_a, trials, 1.0, trial_cv),
            ("b", runs_b, trials_b or trials, ratio, cv_b or trial_cv),
        ):
            sides.append(
                [
                    (
                        _run_values(rng, n, run_sd, cv, factor, noise, outlier, step, integer),
                        "boot0" if one_boot else f"boot-{tag}{i}",
                        f"run-{tag}{i}",
                    )
                    for i in range(count)
                ]
            )
        return compare_runs_verdict(*sides).significant

    return one


def case_check(
    baseline_runs: int,
    *,
    run_sd,
    trial_cv=CV,
    trials=15,
    ratio=1.0,
    noise="normal",
    outlier=False,
    cv_mine=None,
    step=False,
    integer=None,
):
    """`fairmark check RUN --against tag:…` with `baseline_runs` runs on the same host (verdict.pairs.against_runs,
    what report.check judges with). `cv_mine`: the checked run's trial CV (unequal spreads)."""
    from fairmark.verdict.pairs import against_runs

    def run_cell(rid, values):
        return cell("A", values, range(len(values)), boots=["boot0"] * len(values), run=rid)

    def one(rng):
        shape = (noise, outlier, step, integer)
        base = [
            [run_cell(f"base{i}", _run_values(rng, trials, run_sd, trial_cv, 1.0, *shape))]
            for i in range(baseline_runs)
        ]
        mine = run_cell("mine", _run_values(rng, trials, run_sd, cv_mine or trial_cv, ratio, *shape))
        (checked,), _ = against_runs([mine], base, name="mine", confidence=95.0)
        return bool(checked.verdict and checked.verdict.comparison.significant)

    return one


def ar1_offsets(rng, n, sd, phi):
    """n run offsets in time order: a stationary AR(1) of standard deviation sd (a machine drifting slowly)."""
    z = np.empty(n)
    z[0] = rng.normal(0, 1)
    for i in range(1, n):
        z[i] = phi * z[i - 1] + math.sqrt(1 - phi * phi) * rng.normal(0, 1)
    return sd * z


def case_runs_drift(order: str, *, phi, run_sd=0.02, trial_cv=CV, trials=15, ratio=1.0):
    """`compare-runs A… --vs B…` of runs made in the time order `order` (e.g. "AAAABBBB", "ABABABAB") on one boot,
    their offsets AR(1) at φ in that order; each run's start time is its position (hours)."""

    def one(rng):
        offsets = ar1_offsets(rng, len(order), run_sd, phi)
        sides: dict[str, list] = {"A": [], "B": []}
        for k, side in enumerate(order):
            factor = (ratio if side == "B" else 1.0) * (1 + offsets[k])
            values = list(100.0 * factor * (1 + NOISE["normal"](rng, trials, trial_cv)))
            sides[side].append((values, "boot0", f"run-{side}{k}", 3600.0 * k))
        return compare_runs_verdict(sides["A"], sides["B"]).significant

    return one


def case_check_drift(baseline_runs: int, *, phi, run_sd=0.02, trial_cv=CV, trials=15, ratio=1.0):
    """`check RUN --against tag:…`: `baseline_runs` runs then the run checked, their offsets AR(1) at φ in that
    order (a machine drifting slowly between CI jobs); each run's start time is its position."""
    from fairmark.verdict.pairs import against_runs

    def one(rng):
        offsets = ar1_offsets(rng, baseline_runs + 1, run_sd, phi)

        def run_cell(k, rid, factor):
            values = 100.0 * factor * (1 + offsets[k]) * (1 + NOISE["normal"](rng, trials, trial_cv))
            return cell("A", values, range(trials), boots=["boot0"] * trials, run=rid, start=3600.0 * k)

        base = [[run_cell(k, f"base{k}", 1.0)] for k in range(baseline_runs)]
        mine = run_cell(baseline_runs, "mine", ratio)
        (checked,), _ = against_runs([mine], base, name="mine", confidence=95.0)
        return bool(checked.verdict and checked.verdict.comparison.significant)

    return one


def _step_run(cells):
    """A step's run as the bisect pools it (verdict.run.RunVerdicts: its cells and its confidence)."""
    return SimpleNamespace(cells=cells, design=SimpleNamespace(confidence=95.0))


def case_bisect(shape: RunShape, *, attempts=3):
    """One bisect step whose candidate is the good commit (an A/A step) and whose bad end is 10% slower: the
    step answers 'bad' only if the candidate is claimed slower than good. pooled_verdicts decides; the loop is
    the step's (bisect.search.Bisect._step): up to `attempts` runs, pooled, until an answer."""
    from fairmark.bisect.search import BAD, CANDIDATE, GOOD, pooled_verdicts
    from fairmark.verdict import rule

    def one(rng):
        runs = []
        for _ in range(attempts):
            good, cand, n = interleaved(rng, shape)
            bad = 1.10 * good[rng.permutation(len(good))]
            r, why = range(n), stop_reason(good, cand, n, shape)
            cells = [
                cell(v, x[:n], r, stop_reason=why) for v, x in ((GOOD, good), (CANDIDATE, cand), (BAD, bad))
            ]
            runs.append(_step_run(tuple(cells)))
            verdicts = pooled_verdicts(runs)
            vg, vb = verdicts.get("w wall_s"), verdicts.get("w wall_s vs bad")
            slower, faster = bool(vg and rule.proven_worse(vg)), bool(vb and rule.proven_better(vb))
            if slower or faster:
                return slower and not (faster and abs(vg.comparison.percent) <= abs(vb.comparison.percent))
        return False

    return one


def case_bisect_verdict(shape: RunShape, runs: int, ratio: float = 1.0):
    """The candidate-vs-good verdict itself, pooled over a step's `runs` runs (rounds kept apart per run)."""
    from fairmark.bisect.search import CANDIDATE, GOOD, pooled_verdicts

    def one(rng):
        steps = []
        for _ in range(runs):
            good, cand, n = interleaved(rng, shape, ratio)
            why = stop_reason(good, cand, n, shape)  # as the runner stored it: the step's verdict reads it
            cells = (
                cell(GOOD, good[:n], range(n), stop_reason=why),
                cell(CANDIDATE, cand[:n], range(n), stop_reason=why),
            )
            steps.append(_step_run(cells))
        return pooled_verdicts(steps)["w wall_s"].comparison.significant

    return one


def case_coverage(shape: RunShape, ratio: float):
    """Does the run verdict's interval (the sentence's) contain the true ratio?"""

    def one(rng):
        a, b, n = interleaved(rng, shape, ratio)
        c = run_verdict(a, b, n, shape)
        low, high = c.ratio_ci_low, c.ratio_ci_high  # nan: no interval (never covers)
        return bool(low <= ratio <= high), n

    return one


def case_history(
    *,
    phi=0.0,
    points=20,
    sd=0.03,
    step=0.0,
    at=12,
    alpha=0.01,
    permutations=199,
    noise="normal",
    outlier=False,
):
    from fairmark.report.history import HistoryOptions, change_points
    from fairmark.store.history import Point, Series

    opts = HistoryOptions(workload="w", alpha=alpha, permutations=permutations)
    t0 = dt.datetime(2026, 1, 1)

    def one(rng):
        e = NOISE[noise](rng, points + 50, 1.0)
        z = np.zeros(points + 50)
        for i in range(1, points + 50):
            z[i] = phi * z[i - 1] + math.sqrt(1 - phi**2) * e[i]
        means = 100 * (1 + sd * z[50:] + step * (np.arange(points) >= at))
        if outlier:  # one run 20% slower (a run disturbed throughout): not a change of level
            means[int(rng.integers(0, points))] *= 1.2
        pts = [Point(f"r{i}", t0 + dt.timedelta(hours=i), 10, float(m), 1.0) for i, m in enumerate(means)]
        found = change_points(Series("h", "w", "wall_s", "s", "lower", pts), opts)
        if step:
            return len(found) == 1 and abs(found[0]["index"] - at) <= 1
        return bool(found)

    return one


def case_mde_run(shape: RunShape):
    """A run's stated MDE, then a run at that change: detected?"""

    def one(rng):
        a, b, n = interleaved(rng, shape)
        mde = run_verdict(a, b, n, shape).mde_percent
        if not math.isfinite(mde):
            return False
        a, b, n = interleaved(rng, shape, 1 + mde / 100)
        return run_verdict(a, b, n, shape).significant

    return one


def case_mde_run_regime(shape: RunShape, capped: bool):
    """case_mde_run for the runs that ended in one regime only: stopped at the length their first stage planned
    (`capped` False), or cut at max_trials (True) — drawn until the first run ended that way."""

    def one(rng):
        while True:
            a, b, n = interleaved(rng, shape)
            if (n >= shape.max_trials) == capped:
                break
        mde = run_verdict(a, b, n, shape).mde_percent
        if not math.isfinite(mde):
            return False
        a, b, n = interleaved(rng, shape, 1 + mde / 100)
        return run_verdict(a, b, n, shape).significant

    return one


def case_mde_compare(n_a, n_b, cv=CV):
    def one(rng):
        (j,) = _files(list(100 * (1 + normal(rng, n_a, cv))), list(100 * (1 + normal(rng, n_b, cv))))
        mde = j.comparison.mde_percent
        if not math.isfinite(mde):
            return False
        a, b = 100 * (1 + normal(rng, n_a, cv)), 100 * (1 + mde / 100) * (1 + normal(rng, n_b, cv))
        return _files(list(a), list(b))[0].comparison.significant

    return one


def case_mde_units(units: int, *, run_sd=0.02, trial_cv=CV, trials=10):
    def one(rng):
        def sides(ratio):
            return [
                [
                    (_run_values(rng, trials, run_sd, trial_cv, f), f"boot-{t}{i}", f"run-{t}{i}")
                    for i in range(units)
                ]
                for t, f in (("a", 1.0), ("b", ratio))
            ]

        mde = compare_runs_verdict(*sides(1.0)).mde_percent
        if not math.isfinite(mde):
            return False
        return compare_runs_verdict(*sides(1 + mde / 100)).significant

    return one


# ---- stop = "decision" (issue 36): the run stops when run.loop.stoprule says so, judged as the run is -------------
def decision_interleaved(rng, shape: RunShape, ratio: float = 1.0, cells: int = 2):
    """`cells` cells' values over max_trials rounds (one trial sequence, the runner's order: rounds in twos), with the
    shape's event at a random trial shortly after the first look (within its next 8 rounds: a run that decides
    early would rarely see an event placed anywhere up to max_trials). The first cell is the baseline, the
    second is `ratio` × it, a third (a bisect step's bad end) 1.10 ×."""
    n_max, k = shape.max_trials, shape.min_trials
    z = NOISE[shape.noise](rng, cells * n_max, shape.cv).reshape(n_max, cells)
    order = np.argsort(rng.random((n_max, cells)), axis=1)  # each cell's position inside its round
    if not os.environ.get("SIM_RANDOM_ORDER"):  # as plan.schedule.Order: round 2k+1 is round 2k reversed
        order[1::2] = cells - 1 - order[0::2][: n_max // 2]
    pos = cells * np.arange(n_max)[:, None] + order  # each value's position in the trial sequence
    if (
        shape.noise == "ar1"
    ):  # drift follows the trial sequence: each value takes its own place's (other noise
        z = z.reshape(-1)[pos]  # is exchangeable inside the round, and keeps its draws of the table's rows)
    if shape.cv_b is not None:
        z[:, 1] = NOISE[shape.noise](rng, n_max, shape.cv_b)
    mean = shape.integer or 100.0
    x = mean * (1 + z) * np.array([1.0, ratio, 1.10][:cells])
    x *= 1 + shape.order_effect * order  # each later place in the round that much slower
    if shape.event:
        at = int(rng.integers(cells * k, cells * min(n_max, k + 8)))
        if shape.event == "outlier":
            x[pos == at] *= 1.2
        elif shape.event == "step":
            x[pos >= at] *= 1.15
    if shape.integer:
        x = np.round(x)
    return x


def decision_policy(shape: RunShape):
    from fairmark.plan.model import RunPolicy

    return RunPolicy(min_trials=shape.min_trials, max_trials=shape.max_trials, stop="decision")


def decision_stop(x, shape: RunShape, names=("A", "B"), decide=((), False)):
    """The round after which run.loop.stoprule stops the group (the runner asks after every round), and its reason."""
    from fairmark.run.loop.stoprule import _decided

    policy = decision_policy(shape)
    for n in range(shape.min_trials, shape.max_trials + 1):
        members = [
            SimpleNamespace(
                cell=SimpleNamespace(variant=v), values=list(x[:n, i]), value_rounds=list(range(n))
            )
            for i, v in enumerate(names)
        ]
        why = _decided(members, policy, names[0], decide)
        if why:
            return n, why
    return shape.max_trials, "max_trials"


def decision_verdict(x, n, why, names=("A", "B")):
    """The run's verdict as `run`, `show`, `report` give it (verdict.pairs.within_run, the run's sequential design)."""
    from fairmark.verdict.pairs import RunDesign, within_run
    from fairmark.verdict.run import sequential_design

    return within_run(
        tuple(cell(v, x[:n, i], range(n), stop_reason=why) for i, v in enumerate(names)),
        RunDesign(names[0], 95.0, sequential=sequential_design(decision_policy(SHAPE_OF[0]).model_dump())),
    )


SHAPE_OF: list[RunShape] = [RunShape()]  # the shape decision_verdict's design is read from (set per draw)


def case_decision(shape: RunShape, ratio: float = 1.0, want: str = "different"):
    """A run stopped when decided: (its verdict is `want` — "different", "equivalent" or "covers" the true
    ratio —, the trials per side it took)."""

    def one(rng):
        SHAPE_OF[0] = shape
        x = decision_interleaved(rng, shape, ratio)
        n, why = decision_stop(x, shape)
        (v,) = decision_verdict(x, n, why)
        c = v.comparison
        if want == "covers":
            return bool(c.ratio_ci_low <= ratio <= c.ratio_ci_high), n
        return (c.sequential or {}).get("decision") == want, n

    return one


def case_decision_bisect(shape: RunShape, ratio: float = 1.0):
    """A bisect step under the decision stop (its candidate `ratio` × good, bad 1.10 ×): one run, stopped when
    either of the step's questions is decided (run.loop.stoprule with the step's pairs); (the step answers "bad",
    trials per side). An A/A step (ratio 1) answers "bad" only on a false claim."""
    from fairmark.bisect.search import BAD, CANDIDATE, GOOD, pooled_verdicts
    from fairmark.verdict import rule

    names = (GOOD, CANDIDATE, BAD)
    decide = (((GOOD, CANDIDATE), (BAD, CANDIDATE)), True)

    def one(rng):
        SHAPE_OF[0] = shape
        x = decision_interleaved(rng, shape, ratio, cells=3)
        n, why = decision_stop(x, shape, names, decide)
        cells = tuple(cell(v, x[:n, i], range(n), stop_reason=why) for i, v in enumerate(names))
        design = SimpleNamespace(confidence=95.0, sequential=sequential_design_of(shape), calibrations=None)
        verdicts = pooled_verdicts([SimpleNamespace(cells=cells, design=design)])
        vg, vb = verdicts.get("w wall_s"), verdicts.get("w wall_s vs bad")
        slower, faster = bool(vg and rule.proven_worse(vg)), bool(vb and rule.proven_better(vb))
        return bool(slower and not faster), n

    return one


def boot_values(rng, boots: int, per_boot: int, factor: float, boot_sd: float, trial_cv: float):
    """One variant's boots: each its own offset (σ boot_sd), each trial its own noise (CV trial_cv)."""
    offsets = rng.normal(0.0, boot_sd, boots)
    return 100.0 * factor * (1 + offsets[:, None]) * (1 + trial_cv * rng.standard_normal((boots, per_boot)))


def case_boots(ratio=1.0, *, boot_sd=0.01, trial_cv=0.015, auto=True, boots=2, want="different"):
    """A run of two boot variants, A B B A …: boots = "auto" (min 2, max 8, looking after every block with
    run.loop.stoprule.boot_decision, judged as the run is: the boot as the unit, its sequential test) or a fixed
    number of boots per variant (judged by stats.levels' unit test); 5 trials per boot. (the verdict is `want`,
    boots per variant used)."""
    from fairmark.plan.model import RunPolicy
    from fairmark.run.loop.stoprule import boot_decision
    from fairmark.verdict.pairs import RunDesign, within_run
    from fairmark.verdict.run import boot_design

    policy = RunPolicy(min_trials=5, max_trials=30, boots="auto" if auto else boots, min_boots=2, max_boots=8)
    per, most = 5, (8 if auto else boots)

    def stops(xa, xb, k):
        cs = [
            SimpleNamespace(
                cell=SimpleNamespace(group="w", variant=v),
                values=list(x[:k].ravel()),
                value_rounds=list(range(k * per)),
            )
            for v, x in (("A", xa), ("B", xb))
        ]
        return boot_decision(
            [SimpleNamespace(workload=SimpleNamespace(name="w"), cells=cs)], policy, "A", per, k
        )

    def one(rng):
        xa = boot_values(rng, most, per, 1.0, boot_sd, trial_cv)
        xb = boot_values(rng, most, per, ratio, boot_sd, trial_cv)
        k = most
        for k in range(2, most + 1, 2) if auto else [most]:
            if auto and stops(xa, xb, k):
                break
        cells = tuple(
            cell(v, x[:k].ravel(), range(k * per), boots=[f"{v}{i // per}" for i in range(k * per)])
            for v, x in (("A", xa), ("B", xb))
        )
        design = RunDesign("A", 95.0, by_boot=True, sequential=boot_design(policy.model_dump()))
        (v,) = within_run(cells, design)
        c = v.comparison
        hit = c.significant if want == "different" else (c.sequential or {}).get("decision") == want
        return hit, k

    return one


def sequential_design_of(shape: RunShape):
    from fairmark.verdict.run import sequential_design

    return sequential_design(decision_policy(shape).model_dump())


SLOW_EFFECTS = (0, 2, 5)  # issue 38: benchstat beside fairmark on a few slow values
QUICK = RunShape(min_trials=QUICK_MIN, max_trials=QUICK_MAX)
QUICK_INT = RunShape(cv=0.03, integer=10.4, min_trials=QUICK_MIN, max_trials=QUICK_MAX)
D = "run, stop = decision"
DQ = RunShape(min_trials=QUICK_MIN, max_trials=QUICK_MAX)


def DP(most: int, cv: float = 0.015) -> RunShape:
    """A shape at the plan's default min_trials (5: the first look), normal noise."""
    return RunShape(cv=cv, min_trials=5, max_trials=most)


DECISION_CASES: list[tuple[str, str, str, Callable[[], Callable]]] = [
    (D, "A/A", "normal, CV 2%", lambda: case_decision(RunShape())),
    (D, "A/A", "lognormal (skew 1.75), CV 2%", lambda: case_decision(RunShape("lognormal"))),
    (D, "A/A", "t(3), CV 2%", lambda: case_decision(RunShape("t3"))),
    (D, "A/A", "two modes (30% at +4.4 sd)", lambda: case_decision(RunShape("bimodal"))),
    (D, "A/A", "AR(1) φ 0.9 drift shared by the cells", lambda: case_decision(RunShape("ar1"))),
    (D, "A/A", "one +20% outlier after the first look", lambda: case_decision(RunShape(event="outlier"))),
    (D, "A/A", "hiccups: 3% of trials +20%", lambda: case_decision(RunShape("hiccups"))),
    (D, "A/A", "+15% step in both cells after the first look", lambda: case_decision(RunShape(event="step"))),
    (D, "A/A", "unequal CVs: A 0.5%, B 5%", lambda: case_decision(RunShape(cv=0.005, cv_b=0.05))),
    (
        D,
        "A/A",
        "order effect: a round's 2nd trial 6% slower",
        lambda: case_decision(RunShape(order_effect=0.06)),
    ),
    (D, "A/A", "integers (mean 10.4, CV 3%)", lambda: case_decision(RunShape(cv=0.03, integer=10.4))),
    (D, "A/A", "--quick (3 to 6 trials), normal CV 2%", lambda: case_decision(DQ)),
    (
        D,
        "A/A",
        "--quick, integers (mean 10.4, CV 3%)",
        lambda: case_decision(RunShape(cv=0.03, integer=10.4, min_trials=QUICK_MIN, max_trials=QUICK_MAX)),
    ),
    (D, "power", "3% slower, CV 1.5%, 5 to 30 trials", lambda: case_decision(DP(30), 1.03)),
    (D, "power", "3% slower, CV 1.5%, 5 to 20 trials", lambda: case_decision(DP(20), 1.03)),
    (D, "power", "3% slower, CV 1.5%, 5 to 13 trials", lambda: case_decision(DP(13), 1.03)),
    (D, "power", "1.5% slower, CV 1.5%, 5 to 30 trials", lambda: case_decision(DP(30), 1.015)),
    (
        D,
        "equivalence",
        "A/A proven within ±2%, CV 1.5%, 5 to 30 trials",
        lambda: case_decision(DP(30), 1.0, "equivalent"),
    ),
    (
        D,
        "equivalence",
        "A/A proven within ±2%, CV 1.5%, 5 to 20 trials",
        lambda: case_decision(DP(20), 1.0, "equivalent"),
    ),
    (
        D,
        "equivalence",
        "A/A proven within ±2%, CV 2%, 5 to 30 trials",
        lambda: case_decision(DP(30, CV), 1.0, "equivalent"),
    ),
    (D, "coverage", "interval covers the ratio 1.0, CV 2%", lambda: case_decision(RunShape(), 1.0, "covers")),
    (
        D,
        "coverage",
        "interval covers the ratio 1.03, CV 2%",
        lambda: case_decision(RunShape(), 1.03, "covers"),
    ),
    (D, "coverage", "interval covers the ratio 1.2, CV 2%", lambda: case_decision(RunShape(), 1.2, "covers")),
    ("boots = auto", "A/A", "boot σ 1%, trial CV 1.5%, 2 to 8 boots", lambda: case_boots()),
    ("boots = auto", "A/A", "boot σ 3%, trial CV 1.5%, 2 to 8 boots", lambda: case_boots(boot_sd=0.03)),
    ("boots = auto", "A/A", "boot σ 0.2%, trial CV 1.5%, 2 to 8 boots", lambda: case_boots(boot_sd=0.002)),
    ("boots = auto", "power", "3% slower, boot σ 1%, trial CV 1.5%", lambda: case_boots(1.03)),
    (
        "boots = auto",
        "equivalence",
        "A/A proven within ±2%, boot σ 1%",
        lambda: case_boots(1.0, want="equivalent"),
    ),
    ("boots = 2", "A/A", "boot σ 1%, trial CV 1.5% (before: fixed)", lambda: case_boots(auto=False)),
    ("boots = 2", "power", "3% slower, boot σ 1% (before: fixed)", lambda: case_boots(1.03, auto=False)),
    ("boots = 8", "power", "3% slower, boot σ 1% (fixed)", lambda: case_boots(1.03, auto=False, boots=8)),
    (
        "bisect, stop = decision",
        "A/A",
        "step (candidate = good), normal CV 2%",
        lambda: case_decision_bisect(RunShape()),
    ),
    (
        "bisect, stop = decision",
        "A/A",
        "step, one +20% outlier after the first look",
        lambda: case_decision_bisect(RunShape(event="outlier")),
    ),
    (
        "bisect, stop = decision",
        "power",
        "step (candidate = bad, +10%), normal CV 2%",
        lambda: case_decision_bisect(RunShape(), 1.10),
    ),
]
CASES: list[tuple[str, str, str, Callable[[], Callable]]] = [
    # (path, kind, description, factory)
    ("run", "A/A", "normal, CV 2%", lambda: case_run(RunShape())),
    ("run", "A/A", "lognormal (skew 1.75), CV 2%", lambda: case_run(RunShape("lognormal"))),
    ("run", "A/A", "t(3), CV 2%", lambda: case_run(RunShape("t3"))),
    ("run", "A/A", "two modes (30% at +4.4 sd)", lambda: case_run(RunShape("bimodal"))),
    ("run", "A/A", "AR(1) φ 0.9 drift shared by the cells", lambda: case_run(RunShape("ar1"))),
    ("run", "A/A", "one +20% outlier after the first stage", lambda: case_run(RunShape(event="outlier"))),
    ("run", "A/A", "hiccups: 3% of trials +20%", lambda: case_run(RunShape("hiccups"))),
    ("run", "A/A", "+15% step in both cells mid-run", lambda: case_run(RunShape(event="step"))),
    ("run", "A/A", "unequal CVs: A 0.5%, B 5%", lambda: case_run(RunShape(cv=0.005, cv_b=0.05))),
    ("run", "A/A", "--quick (3 to 6 trials), normal CV 2%", lambda: case_run(QUICK)),
    ("run", "A/A", "--quick, integers (mean 10.4, CV 3%)", lambda: case_run(QUICK_INT)),
    (
        "run",
        "A/A",
        "--quick, one +20% outlier after the first stage",
        lambda: case_run(RunShape(event="outlier", min_trials=QUICK_MIN, max_trials=QUICK_MAX)),
    ),
    (
        "run",
        "power",
        "3% slower, CV 1.5%, ≤ 20 trials",
        lambda: case_run(RunShape(cv=0.015, max_trials=20), 1.03),
    ),
    *[
        (
            "run",
            "power",
            f"3% slower, CV 1.5%, min_trials {k}, ≤ 20 trials",
            lambda k=k: case_run(RunShape(cv=0.015, min_trials=k, max_trials=20), 1.03),
        )
        for k in (3, 4, 5)
    ],
    ("run", "MDE", "at the stated MDE, normal CV 2%", lambda: case_mde_run(RunShape())),
    ("run", "MDE", "at the stated MDE, --quick", lambda: case_mde_run(QUICK)),
    (
        "run",
        "MDE",
        "at the stated MDE, runs that stopped at their planned length",
        lambda: case_mde_run_regime(RunShape(), capped=False),
    ),
    (
        "run",
        "MDE",
        "at the stated MDE, runs cut at max_trials",
        lambda: case_mde_run_regime(RunShape(), capped=True),
    ),
    ("run", "coverage", "interval covers the ratio 1.0, CV 2%", lambda: case_coverage(RunShape(), 1.0)),
    ("run", "coverage", "interval covers the ratio 1.2, CV 2%", lambda: case_coverage(RunShape(), 1.2)),
    ("run", "coverage", "interval covers the ratio 2.0, CV 2%", lambda: case_coverage(RunShape(), 2.0)),
    ("compare", "A/A", "10 vs 10, normal CV 2%", lambda: case_compare(10, 10)),
    ("compare", "A/A", "10 vs 10, lognormal", lambda: case_compare(10, 10, noise="lognormal")),
    ("compare", "A/A", "10 vs 10, t(3)", lambda: case_compare(10, 10, noise="t3")),
    ("compare", "A/A", "10 vs 10, one value +20%", lambda: case_compare(10, 10, outlier=True)),
    (
        "compare",
        "A/A",
        "10 vs 10, hiccups (3% of values +20%)",
        lambda: case_compare(10, 10, noise="hiccups"),
    ),
    (
        "compare",
        "A/A",
        "20 values CV 0.5% vs 5 values CV 5%",
        lambda: case_compare(20, 5, cv_a=0.005, cv_b=0.05),
    ),
    (
        "compare",
        "A/A",
        "5 values CV 5% vs 20 values CV 0.5%",
        lambda: case_compare(5, 20, cv_a=0.05, cv_b=0.005),
    ),
    (
        "compare",
        "A/A",
        "10 vs 10, +15% step in both files",
        lambda: case_compare(10, 10, step=True),
    ),
    ("compare", "A/A", "3 vs 3 (--quick), normal CV 2%", lambda: case_compare(3, 3)),
    (
        "compare",
        "A/A",
        "6 vs 6 integers (mean 10.4, CV 3%)",
        lambda: case_compare(6, 6, cv_a=0.03, cv_b=0.03, integer=10.4),
    ),
    (
        "compare",
        "power",
        "3% slower, CV 1.5%, 10 vs 10",
        lambda: case_compare(10, 10, cv_a=0.015, cv_b=0.015, ratio=1.03),
    ),
    ("compare", "MDE", "at the stated MDE, 10 vs 10", lambda: case_mde_compare(10, 10)),
    *[
        (
            "compare",
            "power" if pct else "A/A",
            f"10 vs 10, CV 2%, 10% of values 5–20% slow, B +{pct}%",
            (lambda pct=pct: case_slow(1 + pct / 100)),
        )
        for pct in SLOW_EFFECTS
    ],
    ("compare-runs", "A/A", "1 vs 1 run, one boot, run offset 2%", lambda: case_runs(1, 1, run_sd=0.02)),
    ("--vs", "A/A", "AAAA BBBB, offsets AR(1) φ 0.3 (sd 2%)", lambda: case_runs_drift("AAAABBBB", phi=0.3)),
    ("--vs", "A/A", "AAAA BBBB, offsets AR(1) φ 0.6 (sd 2%)", lambda: case_runs_drift("AAAABBBB", phi=0.6)),
    ("--vs", "A/A", "ABAB ABAB, offsets AR(1) φ 0.6 (sd 2%)", lambda: case_runs_drift("ABABABAB", phi=0.6)),
    ("--vs", "A/A", "AAAA BBBB, independent offsets (sd 2%)", lambda: case_runs_drift("AAAABBBB", phi=0.0)),
    (
        "--vs",
        "power",
        "+10%, AAAA BBBB, AR(1) φ 0.6",
        lambda: case_runs_drift("AAAABBBB", phi=0.6, ratio=1.10),
    ),
    (
        "--vs",
        "power",
        "+10%, ABAB ABAB, AR(1) φ 0.6",
        lambda: case_runs_drift("ABABABAB", phi=0.6, ratio=1.10),
    ),
    ("compare-runs", "A/A", "1 vs 1 run, one boot, no run offset", lambda: case_runs(1, 1, run_sd=0.0)),
    (
        "compare-runs",
        "A/A",
        "1 vs 1 run, lognormal trials, run offset 2%",
        lambda: case_runs(1, 1, run_sd=0.02, noise="lognormal"),
    ),
    (
        "compare-runs",
        "A/A",
        "1 vs 1 run of 3 trials (--quick), run offset 2%",
        lambda: case_runs(1, 1, run_sd=0.02, trials=3),
    ),
    (
        "compare-runs",
        "A/A",
        "1 vs 1 run, 20 values CV 0.5% vs 5 values CV 5%",
        lambda: case_runs(1, 1, run_sd=0.0, trial_cv=0.005, trials=20, trials_b=5, cv_b=0.05),
    ),
    ("--vs", "A/A", "2 vs 2 runs, one boot, run offset 3%", lambda: case_runs(2, 2, run_sd=0.03)),
    (
        "--vs",
        "A/A",
        "4 vs 4 runs, trials CV 0.5% vs 5%, offset 1%",
        lambda: case_runs(4, 4, run_sd=0.01, trial_cv=0.005, cv_b=0.05),
    ),
    (
        "--vs",
        "A/A",
        "4 vs 4 runs, +15% step mid-run in every run, offset 1%",
        lambda: case_runs(4, 4, run_sd=0.01, step=True),
    ),
    (
        "--vs",
        "A/A",
        "3 vs 3 runs of 3 integers (--quick, mean 10.4, CV 3%)",
        lambda: case_runs(3, 3, run_sd=0.02, trial_cv=0.03, trials=3, integer=10.4),
    ),
    ("--vs", "A/A", "4 vs 4 runs, one boot, run offset 3%", lambda: case_runs(4, 4, run_sd=0.03)),
    (
        "--vs",
        "A/A",
        "4 vs 4 runs, one boot, t(3) trials, offset 3%",
        lambda: case_runs(4, 4, run_sd=0.03, noise="t3"),
    ),
    (
        "--vs",
        "A/A",
        "4 vs 4 runs, one boot, lognormal trials, offset 3%",
        lambda: case_runs(4, 4, run_sd=0.03, noise="lognormal"),
    ),
    (
        "--vs",
        "A/A",
        "4 vs 4 runs, one +20% outlier per run, offset 1%",
        lambda: case_runs(4, 4, run_sd=0.01, outlier=True),
    ),
    (
        "--vs",
        "A/A",
        "3 vs 3 runs of 3 trials (--quick), offset 2%",
        lambda: case_runs(3, 3, run_sd=0.02, trials=3),
    ),
    ("--vs", "A/A", "2 vs 2 boots, boot offset 3%", lambda: case_runs(2, 2, run_sd=0.03, one_boot=False)),
    (
        "--vs",
        "A/A",
        "2 boots × 2 trials vs 6 boots × 40, boot 1%, trial 5%",
        lambda: case_runs(2, 6, run_sd=0.01, trial_cv=0.05, trials=2, trials_b=40, one_boot=False),
    ),
    (
        "--vs",
        "A/A",
        "6 boots × 40 vs 2 boots × 2 trials, boot 1%, trial 5%",
        lambda: case_runs(6, 2, run_sd=0.01, trial_cv=0.05, trials=40, trials_b=2, one_boot=False),
    ),
    (
        "--vs",
        "power",
        "3% slower, 4 vs 4 boots, boot 0.5%, trial CV 1.5%",
        lambda: case_runs(4, 4, run_sd=0.005, trial_cv=0.015, one_boot=False, ratio=1.03),
    ),
    ("--vs", "MDE", "at the stated MDE, 3 vs 3 boots", lambda: case_mde_units(3)),
    ("check", "A/A", "10 baseline runs, run offset 2%", lambda: case_check(10, run_sd=0.02)),
    (
        "check",
        "A/A",
        "10 baseline runs then the run, offsets AR(1) φ 0.3 (sd 2%)",
        lambda: case_check_drift(10, phi=0.3),
    ),
    (
        "check",
        "A/A",
        "10 baseline runs then the run, offsets AR(1) φ 0.6 (sd 2%)",
        lambda: case_check_drift(10, phi=0.6),
    ),
    (
        "check",
        "power",
        "+10%, 10 baseline runs then the run, AR(1) φ 0.6",
        lambda: case_check_drift(10, phi=0.6, ratio=1.10),
    ),
    ("check", "A/A", "1 baseline run, run offset 2%", lambda: case_check(1, run_sd=0.02)),
    ("check", "A/A", "10 baseline runs, no run offset", lambda: case_check(10, run_sd=0.0)),
    (
        "check",
        "A/A",
        "10 baseline runs, t(3) trials, offset 2%",
        lambda: case_check(10, run_sd=0.02, noise="t3"),
    ),
    (
        "check",
        "A/A",
        "10 baseline runs, lognormal trials, offset 2%",
        lambda: case_check(10, run_sd=0.02, noise="lognormal"),
    ),
    (
        "check",
        "A/A",
        "10 baseline runs, one +20% outlier per run, offset 1%",
        lambda: case_check(10, run_sd=0.01, outlier=True),
    ),
    (
        "check",
        "A/A",
        "3 baseline runs of 3 trials (--quick), offset 2%",
        lambda: case_check(3, run_sd=0.02, trials=3),
    ),
    (
        "check",
        "A/A",
        "10 baseline runs CV 0.5%, the checked run CV 5%, offset 1%",
        lambda: case_check(10, run_sd=0.01, trial_cv=0.005, cv_mine=0.05),
    ),
    (
        "check",
        "A/A",
        "10 baseline runs, +15% step mid-run in every run, offset 1%",
        lambda: case_check(10, run_sd=0.01, step=True),
    ),
    (
        "check",
        "A/A",
        "3 baseline runs of 3 integers (--quick, mean 10.4, CV 3%)",
        lambda: case_check(3, run_sd=0.02, trial_cv=0.03, trials=3, integer=10.4),
    ),
    (
        "check",
        "power",
        "3% slower, 10 baseline runs, run offset 0.5%, CV 1.5%",
        lambda: case_check(10, run_sd=0.005, trial_cv=0.015, ratio=1.03),
    ),
    ("bisect", "A/A", "step of up to 3 runs, normal CV 2%", lambda: case_bisect(RunShape())),
    ("bisect", "A/A", "step, one +20% outlier per run", lambda: case_bisect(RunShape(event="outlier"))),
    ("bisect", "A/A", "step, --quick", lambda: case_bisect(QUICK)),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, normal",
        lambda: case_bisect_verdict(RunShape(), 2),
    ),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, t(3)",
        lambda: case_bisect_verdict(RunShape("t3"), 2),
    ),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, lognormal",
        lambda: case_bisect_verdict(RunShape("lognormal"), 2),
    ),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, one +20% outlier per run",
        lambda: case_bisect_verdict(RunShape(event="outlier"), 2),
    ),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, +15% step mid-run",
        lambda: case_bisect_verdict(RunShape(event="step"), 2),
    ),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, unequal CVs 0.5% / 5%",
        lambda: case_bisect_verdict(RunShape(cv=0.005, cv_b=0.05), 2),
    ),
    ("bisect", "A/A", "candidate vs good pooled over 2 runs, --quick", lambda: case_bisect_verdict(QUICK, 2)),
    (
        "bisect",
        "A/A",
        "candidate vs good pooled over 2 runs, --quick integers",
        lambda: case_bisect_verdict(QUICK_INT, 2),
    ),
    (
        "bisect",
        "power",
        "3% slower, CV 1.5%, ≤ 20 trials, 1 run",
        lambda: case_bisect_verdict(RunShape(cv=0.015, max_trials=20), 1, 1.03),
    ),
    *DECISION_CASES,
    ("history", "A/A", "20 independent points, α 0.01", lambda: case_history()),
    ("history", "A/A", "20 lognormal points, α 0.01", lambda: case_history(noise="lognormal")),
    ("history", "A/A", "20 t(3) points, α 0.01", lambda: case_history(noise="t3")),
    ("history", "A/A", "20 points, one of them +20%, α 0.01", lambda: case_history(outlier=True)),
    ("history", "A/A", "20 points AR(1) φ 0.3, α 0.01", lambda: case_history(phi=0.3)),
    ("history", "A/A", "20 points AR(1) φ 0.6, α 0.01", lambda: case_history(phi=0.6)),
    (
        "history",
        "power",
        "+10% step at point 12 of 22, found alone (±1)",
        lambda: case_history(points=22, step=0.10),
    ),
]


# ---- benchstat beside fairmark (issue 38) ----------------------------------------------------------------------
BENCHSTAT_N = 10


def _slow_pair(rng, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    return (
        100.0 * (1 + slow_outliers(rng, BENCHSTAT_N)),
        100.0 * ratio * (1 + slow_outliers(rng, BENCHSTAT_N)),
    )


def case_slow(ratio: float):
    """10 vs 10 values with a few slow ones (slow_outliers), B `ratio` × A, judged as `fairmark compare`."""

    def one(rng):
        a, b = _slow_pair(rng, ratio)
        (j,) = _files(list(a), list(b), unit="s")
        return j.comparison.significant

    return one


def benchstat_hits(ratio: float, sims: int, seed: int) -> int | None:
    """How many pairs drawn from the same shape Go's benchstat (golang.org/x/perf/cmd/benchstat, its U test at α
    0.05) calls different: all pairs in one call, one benchmark per pair. None without a benchstat binary."""
    import shutil
    import tempfile

    tool = shutil.which("benchstat") or os.path.expanduser("~/go/bin/benchstat")
    if not os.access(tool, os.X_OK):
        return None
    rng = np.random.default_rng(seed)
    pairs = [_slow_pair(rng, ratio) for _ in range(sims)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, name) for name in ("a.txt", "b.txt")]
        for side, path in enumerate(paths):
            with open(path, "w") as fh:
                for i, pair in enumerate(pairs):
                    fh.writelines(f"BenchmarkSim{i} 1 {float(v)!r} ns/op\n" for v in pair[side])
        out = subprocess.run([tool, "-format", "csv", *paths], capture_output=True, text=True, check=True)
    rows = [line.split(",") for line in out.stdout.splitlines() if line.startswith("Sim")]
    return sum(1 for row in rows if row[-2] != "~")


def wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _work(job: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """(case, hits, trials per side summed, and their squares summed: a case of the decision stop returns (hit,
    trials), others a hit)."""
    index, sims, seed = job
    one = CASES[index][3]()
    rng = np.random.default_rng(seed)
    hits = trials = squares = 0
    for _ in range(sims):
        out = one(rng)
        hit, n = out if isinstance(out, tuple) else (out, 0)
        hits += bool(hit)
        trials += n
        squares += n * n
    return index, hits, trials, squares


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=4000, help="simulations per case (history: a quarter)")
    ap.add_argument("--only", default="", help="only the cases whose path or description contains this")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument(
        "--no-time-order",
        action="store_true",
        help="judge without the runs' start times (the verdicts before issue 31 item 6), for a before/after",
    )
    ap.add_argument(
        "--random-order",
        action="store_true",
        help="decision rows: each round shuffled on its own (the runner's order before its rounds went in twos)",
    )
    ap.add_argument(
        "--seed",
        type=int,
        default=0,
        help="another set of random draws (0: docs/statistics.md's; a check needs others)",
    )
    ap.add_argument("--path", default="", help="only the cases of this path (e.g. run)")
    args = ap.parse_args()
    if args.no_time_order:  # read by the worker processes too (inherited environment)
        os.environ["SIM_NO_TIME_ORDER"] = "1"
    if args.random_order:
        os.environ["SIM_RANDOM_ORDER"] = "1"
    chosen = [i for i, c in enumerate(CASES) if args.only in c[0] or args.only in c[2]]
    chosen = [i for i in chosen if not args.path or CASES[i][0] == args.path]
    chunks = 8
    jobs = []
    for i in chosen:
        sims = args.sims // 4 if CASES[i][0] == "history" else args.sims
        per = -(-sims // chunks)
        jobs += [
            (i, min(per, sims - k * per), 10**6 * args.seed + 1000 * i + k)
            for k in range(chunks)
            if sims - k * per > 0
        ]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(__file__) or ".",
    ).stdout.strip()
    start, load0 = time.monotonic(), os.getloadavg()[0]
    hits: dict[int, int] = dict.fromkeys(chosen, 0)
    trials: dict[int, int] = dict.fromkeys(chosen, 0)
    squares: dict[int, int] = dict.fromkeys(chosen, 0)
    with Pool(args.jobs) as pool:
        for i, k, n, n2 in pool.imap_unordered(_work, jobs):
            squares[i] += n2
            hits[i] += k
            trials[i] += n
    totals = {i: sum(n for j, n, _ in jobs if j == i) for i in chosen}
    print(
        f"commit {commit}, seed {args.seed}, load average {load0:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, "
        f"{time.monotonic() - start:.0f} s"
    )
    print(
        "| path | case | kind | rate | 95% interval | trials per side (mean ± its standard error) | simulations |"
    )
    print("|---|---|---|---|---|---|---|")
    for i in chosen:
        path, kind, text, _ = CASES[i]
        lo, hi = wilson(hits[i], totals[i])
        used = _mean_se(trials[i], squares[i], totals[i]) if trials[i] else ""
        print(
            f"| {path} | {text} | {kind} | {100 * hits[i] / totals[i]:.1f}% | [{100 * lo:.1f}, {100 * hi:.1f}] "
            f"| {used} | {totals[i]} |"
        )
    sys.stdout.flush()
    _benchstat_table(chosen, hits, totals, args.seed)


def _benchstat_table(chosen: list[int], hits: dict[int, int], totals: dict[int, int], seed: int) -> None:
    """The slow-value cases again, with Go's benchstat on as many pairs of the same shape beside them."""
    slow = [i for i in chosen if "slow, B +" in CASES[i][2]]
    if not slow:
        return
    print("\n| case | fairmark | benchstat (Go, U test) | simulations |")
    print("|---|---|---|---|")
    for i in slow:
        pct = SLOW_EFFECTS[[k for k, c in enumerate(CASES) if "slow, B +" in c[2]].index(i)]
        theirs = benchstat_hits(1 + pct / 100, totals[i], 10**6 * seed + 7 * i + 1)
        other = "no benchstat binary" if theirs is None else _rate(theirs, totals[i])
        print(f"| {CASES[i][2]} | {_rate(hits[i], totals[i])} | {other} | {totals[i]} |")


def _mean_se(total: int, squares: int, n: int) -> str:
    """The mean trials per side and its Monte Carlo standard error (sd/√n)."""
    mean = total / n
    sd = math.sqrt(max(squares / n - mean * mean, 0.0) * n / max(n - 1, 1))
    return f"{mean:.2f} ± {sd / math.sqrt(n):.2f}"


def _rate(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


if __name__ == "__main__":
    main()
