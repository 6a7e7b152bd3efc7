"""Microbenchmarks: the loop count of a workload with `loops = "auto"`, calibrated once per comparison group
(issue 24; issue 34 item 14: every cell of a group the same count, as pyperf has one per benchmark).

An operation of a few hundred nanoseconds (a system call, a context switch) is far below what one trial can
resolve: starting the trial's process costs milliseconds and varies by more than the operation. As pyperf does
with its loops, the command repeats the operation N times (N handed to it as `{loops}` in its argv and
`$FAIRMARK_LOOPS`), and the per-loop metrics divide the trial's times by N. `"auto"` picks N at the cell's first
trial, before its first warm-up: calibration trials (not stored as trials) with growing N until the loops add at
least `TARGET_S` to a trial with one loop; then N is set so that the loops last at least ten times the process
start (at least TARGET_S, at most MAX_LOOPED_S). That N is the count of every cell of the group (the cells
compared with each other) for the whole run: stored with each cell, the steps, one iteration's time and the
start's as an artifact of each, which the reports show. The calibrated start's CPU time is taken off each
trial's CPU time before cpu_s_per_loop divides it (plan.metric.per_loop): what is left is the loops' own.

A per-loop time is one iteration plus the start's share, op · (1 + S / L) for loops lasting L. The start is a
tenth of L or less (unless it alone exceeds a tenth of MAX_LOOPED_S), so its noise — the reason for loops — is
divided down with it; and a ratio of two cells, both with loops of about the same L, is not biased by it — as
long as each cell's L is what it was calibrated to be. So the calibration times the trials' CPU (user + sys of
the trial's tree), not their wall time: on a loaded machine a trial waits for a CPU for most of its wall time
(85% at load 17 on this 2-CPU VM), and a count fitted to such wall times gave two cells loops of very different
lengths — once a significant verdict in the wrong direction on the two Python loops of tests/test_loops.py. An
operation that waits without using a CPU (a sleep) cannot be calibrated this way: give it loops = N.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fairmark.plan.model import MAX_LOOPS
from fairmark.run.spec import Measured

TARGET_S = 0.1  # the looped part of a calibrated trial lasts at least this long (pyperf's default min_time)
START_FACTOR = 10  # … and at least this many times the process start, up to MAX_LOOPED_S
MAX_LOOPED_S = 1.0
# The line through the first and the last step is fitted once the loops last twice the first trial: the process
# start's own noise (±50% on a loaded machine) then moves the slope by a quarter at most.
START_FACTOR_FIT = 2
AIM = 1.2  # each next count aims 20% above what is needed: fewer steps, a margin for the machine's noise
MAX_GROWTH = 1000  # per step: a count estimated from a trial of almost only process start overshoots
MAX_STEPS = 30


class CalibrationFailed(Exception):
    """The calibration could not find a loop count: a calibration trial failed, or the trials did not grow."""

    def __init__(self, message: str, measured: Measured):
        super().__init__(message)
        self.measured = measured


@dataclass(frozen=True)
class Calibration:
    loops: int
    steps: tuple[tuple[int, float, float], ...]  # each calibration trial's (loop count, wall s, CPU s)
    loop_s: float  # one iteration's CPU time, from the first and the last step
    start_s: (
        float  # the CPU time a trial costs besides its loops (the process start), from the same two steps
    )

    @property
    def looped_s(self) -> float:
        """The CPU time of a trial's loops, as estimated."""
        return self.loops * self.loop_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "loops": self.loops,
            "loop_s": self.loop_s,
            "start_s": self.start_s,
            "looped_s": self.looped_s,
            "target_s": TARGET_S,
            "steps": [list(s) for s in self.steps],
        }


def next_count(loops: int, trial_s: float, looped_s: float, needed_s: float) -> int:
    """The next count to try after a trial of `loops` that took `trial_s` of CPU, of which its loops `looped_s`
    (the trial less the one with one loop: noisy, even negative): aiming at `needed_s` of loops, at least
    doubling, and never so far that the next trial could take more than ten times `needed_s` (its loops cannot
    have taken more than the whole trial)."""
    safe = max(2.0, min(MAX_GROWTH, 10 * needed_s / max(trial_s, 1e-9)))
    grow = min(AIM * needed_s / max(looped_s, 1e-9), safe)
    return min(MAX_LOOPS, max(2 * loops, math.ceil(loops * grow)))


def calibrate(run: Callable[[int], Measured]) -> Calibration:
    """The loop count for a cell; `run(n)` executes one trial with n loops. Times are the trials' CPU (user +
    sys). A trial with one loop measures the process start (and one iteration); counts grow until the loops add
    TARGET_S, and twice that trial, to it; a line through the first and the last step gives one iteration's time
    and the start's, and the count is the one whose loops take START_FACTOR × the start (at least TARGET_S, at
    most MAX_LOOPED_S): the start is then a tenth of a trial or less, unless it alone takes more than a tenth of
    MAX_LOOPED_S. Raises CalibrationFailed when a trial fails or the count stops growing the trial."""
    steps: list[tuple[int, float, float]] = []
    loops = 1
    while True:
        m = run(loops)
        if m.status != "ok":
            raise CalibrationFailed(f"its calibration trial with loops = {loops} {m.status}: {m.error}", m)
        steps.append((loops, m.wall_s, m.cpu_s))
        looped = m.cpu_s - steps[0][2]
        needed = max(TARGET_S, START_FACTOR_FIT * steps[0][2])
        if loops > 1 and looped >= needed:
            break
        if loops >= MAX_LOOPS or len(steps) >= MAX_STEPS:
            raise CalibrationFailed(
                f"a trial with loops = {loops} took {1e3 * m.cpu_s:.3g} ms of CPU, with loops = 1 "
                f"{1e3 * steps[0][2]:.3g} ms: does the command repeat its operation {{loops}} / $FAIRMARK_LOOPS "
                "times? (an operation that waits without using a CPU needs loops = N)",
                m,
            )
        loops = next_count(loops, m.cpu_s, looped, needed)
    (n1, _, t1), (n, _, t) = steps[0], steps[-1]
    loop_s = (t - t1) / (n - n1)
    start_s = max(t1 - loop_s, 0.0)
    needed = min(max(TARGET_S, START_FACTOR * start_s), MAX_LOOPED_S)
    # the count needed, not the last step's: that step aimed 20% high and doubled at least (a longer trial
    # than asked, by up to twice — a cell's length then depended on where its steps happened to land)
    final = max(1, min(MAX_LOOPS, math.ceil(needed / loop_s)))
    return Calibration(final, tuple(steps), loop_s, start_s)
