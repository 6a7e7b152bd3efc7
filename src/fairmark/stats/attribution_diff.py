"""Where a difference went: each function's CPU time per trial on sides A and B, and its difference B - A with an
interval, controlled for the many functions tested (issue 35).

A single differential flame graph colours noise as confidently as signal. Here every profiled trial is one
observation: a function's time in that trial is its share of the trial's samples times the trial's CPU time
(rusage of the trial's process tree), so a function that takes 10% of a 2 s trial costs 0.2 s in it whatever the
sampling rate. Profiled trials of both sides taken in the same rounds are paired (the round's machine state is
shared, as for measured trials); otherwise the sides are compared unpaired (Welch). Functions are tested by a t
test each; Benjamini-Hochberg keeps the expected share of false claims at alpha across them, and the intervals
are the matching false-coverage-rate intervals (Benjamini & Yekutieli 2005: level 1 - R*alpha/m for R claims of m
tests), so a claimed function's interval excludes 0 and an unclaimed one's includes it.

Pure functions over folded stacks (one "frame;frame;... count" line per stack, the first frame the command name,
kernel frames marked "_[k]" by the collapser) and numbers; no I/O.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from fairmark.stats.fdr import bh_adjust
from fairmark.stats.profile_looks import ALPHA, look_alpha, look_index

KERNEL_MARK = "_[k]"
MIN_SHARE = (
    0.005  # functions below 0.5% of the pooled CPU time are not tested (chosen blind to the difference)
)
MODES = ("self", "inclusive")


@dataclass(frozen=True)
class ProfiledTrial:
    """One profiled trial: its round, its folded stacks and its CPU time (user + system, seconds)."""

    round: int
    folded: str
    cpu_s: float


@dataclass(frozen=True)
class FunctionDiff:
    function: str
    space: str  # "user" or "kernel"
    mode: str  # "self" (samples where it is the leaf) or "inclusive" (samples where it is on the stack)
    a_s: float  # mean seconds per trial on side A
    b_s: float
    diff_s: float  # B - A
    low_s: float  # the false-coverage-rate-adjusted interval of diff_s
    high_s: float
    p_value: float
    q_value: float
    claimed: bool  # survives Benjamini-Hochberg at alpha across the functions tested

    @property
    def proven_s(self) -> float:
        """How large the difference is at least: its interval's end nearest 0 (0 when it includes 0)."""
        return max(self.low_s, -self.high_s, 0.0)

    def to_dict(self) -> dict[str, object]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class AttributionDiff:
    design: str  # "paired" (by round), "welch", or "units" (boots or runs as the unit: Welch across units)
    n_a: int  # profiled trials (units, for "units")
    n_b: int
    cpu_a_s: float  # mean CPU seconds per profiled trial
    cpu_b_s: float
    alpha: float  # this comparison's level: its look's share of alpha_in_all (stats.profile_looks)
    tested: int
    functions: tuple[FunctionDiff, ...]  # self then inclusive, each by |difference|, largest first
    looks: tuple[int, ...] = ()  # the rounds the stop looked after; () or one: a fixed number, alpha is all
    alpha_in_all: float | None = None  # the false-claim rate over all the looks together (None: alpha)

    @property
    def look(self) -> int:
        """Which of `looks` (0-based) this comparison is at."""
        return look_index(self.looks, min(self.n_a, self.n_b)) if self.looks else 0

    def claimed(self, mode: str = "self") -> list[FunctionDiff]:
        """The claimed functions, by how much their difference is at least (`proven_s`), largest first. Not by
        |difference|: a function whose CPU time swings with the machine's load can pass the false-discovery-rate
        test by chance (as BH allows) with an interval from near 0 to past a precisely measured difference, and
        its point estimate then came first — the planted program's main_work, whose B - A on its own clock had an
        SD of 20 ms per round at load 7-23 beside the planted function's 24 ms (tests/test_explain_planted.py)."""
        return sorted(
            (f for f in self.functions if f.mode == mode and f.claimed),
            key=lambda f: (-f.proven_s, -abs(f.diff_s), f.function),
        )

    def to_dict(self, units: str = "profiled_trials") -> dict[str, object]:
        """--json's fields; `units` names what n_a and n_b count (profiled trials, or boots and runs)."""
        return {
            "design": self.design,
            units: [self.n_a, self.n_b],
            "cpu_s_per_trial": [self.cpu_a_s, self.cpu_b_s],
            "alpha": self.alpha,
            "looks": list(self.looks),
            "look": self.look + 1 if self.looks else None,
            "alpha_in_all": self.alpha if self.alpha_in_all is None else self.alpha_in_all,
            "tested": self.tested,
            "functions": [f.to_dict() for f in self.functions],
        }


def frame_space(frame: str) -> tuple[str, str]:
    """A frame's function name and its space ("kernel" when the collapser marked it, else "user")."""
    if frame.endswith(KERNEL_MARK):
        return frame[: -len(KERNEL_MARK)], "kernel"
    return frame, "user"


def sample_counts(folded: str) -> tuple[dict[tuple[str, str, str], float], float]:
    """(function, space, mode) -> samples of one trial's folded stacks, and its total samples. The first frame
    (the command name) is not a function; a function recursing counts once per stack in its inclusive count."""
    counts: dict[tuple[str, str, str], float] = defaultdict(float)
    total = 0.0
    for line in folded.splitlines():
        stack, _, num = line.rpartition(" ")
        if not stack or not num.isdigit():
            continue
        n = float(num)
        total += n
        frames = [frame_space(f) for f in stack.split(";")[1:]]
        if not frames:
            continue
        counts[(*frames[-1], "self")] += n
        for name, space in set(frames):
            counts[(name, space, "inclusive")] += n
    return counts, total


def trial_times(trial: ProfiledTrial) -> dict[tuple[str, str, str], float]:
    """Seconds per function in one trial: its share of the trial's samples times the trial's CPU time."""
    counts, total = sample_counts(trial.folded)
    if total <= 0:
        return {}
    return {k: v / total * trial.cpu_s for k, v in counts.items()}


def _matrix(
    times: Sequence[Mapping[tuple[str, str, str], float]], keys: Sequence[tuple[str, str, str]]
) -> np.ndarray:
    return np.array([[t.get(k, 0.0) for k in keys] for t in times], dtype=float).reshape(
        len(times), len(keys)
    )


def _tested_keys(
    times_a: Sequence[Mapping[tuple[str, str, str], float]],
    times_b: Sequence[Mapping[tuple[str, str, str], float]],
    cpu: float,
) -> list[tuple[str, str, str]]:
    pooled: dict[tuple[str, str, str], float] = defaultdict(float)
    for t in (*times_a, *times_b):
        for k, v in t.items():
            pooled[k] += v
    n = len(times_a) + len(times_b)
    return sorted(k for k, v in pooled.items() if v / n >= MIN_SHARE * cpu)


def _paired_rounds(a: Sequence[ProfiledTrial], b: Sequence[ProfiledTrial]) -> list[int] | None:
    """The rounds both sides have exactly one profiled trial of, when there are at least 3 (else None)."""
    ra = [t.round for t in a]
    rb = [t.round for t in b]
    common = sorted({r for r in ra if ra.count(r) == 1} & {r for r in rb if rb.count(r) == 1})
    return common if len(common) >= 3 else None


def _tests(
    xa: np.ndarray, xb: np.ndarray, paired: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column: difference of means, its standard error, degrees of freedom and two-sided p-value."""
    from scipy import stats  # heavy import, only when profiles are compared

    if paired:
        d = xb - xa
        n = d.shape[0]
        diff = d.mean(axis=0)
        se = d.std(axis=0, ddof=1) / math.sqrt(n)
        df = np.full(diff.shape, float(n - 1))
    else:
        na, nb = xa.shape[0], xb.shape[0]
        va, vb = xa.var(axis=0, ddof=1) / na, xb.var(axis=0, ddof=1) / nb
        diff = xb.mean(axis=0) - xa.mean(axis=0)
        se = np.sqrt(va + vb)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        df = np.where(np.isfinite(df), df, float(na + nb - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        tval = np.where(se > 0, np.abs(diff) / se, np.where(diff == 0, 0.0, np.inf))
    p = np.asarray(2 * stats.t.sf(tval, df), dtype=float)
    return diff, se, df, p


def compare_profiles(
    a: Sequence[ProfiledTrial],
    b: Sequence[ProfiledTrial],
    alpha: float = ALPHA,
    looks: tuple[int, ...] = (),
) -> AttributionDiff | None:
    """Each function's difference B - A per trial, with intervals; None with fewer than 2 trials a side.
    `looks`: the rounds after which the adaptive stop was asked (stats.profile_looks): a comparison then claims
    at its look's share of alpha, so that the run's false claims over all of them stay at alpha."""
    if len(a) < 2 or len(b) < 2:
        return None
    rounds = _paired_rounds(a, b)
    if rounds is not None:
        a = sorted((t for t in a if t.round in rounds), key=lambda t: t.round)
        b = sorted((t for t in b if t.round in rounds), key=lambda t: t.round)
    times_a, times_b = [trial_times(t) for t in a], [trial_times(t) for t in b]
    cpu = ([t.cpu_s for t in a], [t.cpu_s for t in b])
    design = "paired" if rounds is not None else "welch"
    level = look_alpha(looks, min(len(a), len(b)), alpha)
    return replace(_differences(times_a, times_b, cpu, design, level), looks=looks, alpha_in_all=alpha)


def compare_units(
    a: Sequence[Sequence[ProfiledTrial]], b: Sequence[Sequence[ProfiledTrial]], alpha: float = ALPHA
) -> AttributionDiff | None:
    """The same with boots (or runs) as the unit, as the verdict takes them when the sides were measured in
    different boots: each unit's mean time per function over its profiled trials is one observation (Welch
    across units), so the boot-to-boot variance is in every interval. None with fewer than 2 units a side
    that have profiled trials."""
    a, b = [u for u in a if u], [u for u in b if u]
    if len(a) < 2 or len(b) < 2:
        return None
    times_a, times_b = [_unit_times(u) for u in a], [_unit_times(u) for u in b]
    cpu = (
        [float(np.mean([t.cpu_s for t in u])) for u in a],
        [float(np.mean([t.cpu_s for t in u])) for u in b],
    )
    return _differences(times_a, times_b, cpu, "units", alpha)


def _unit_times(trials: Sequence[ProfiledTrial]) -> dict[tuple[str, str, str], float]:
    total: dict[tuple[str, str, str], float] = defaultdict(float)
    for t in trials:
        for k, v in trial_times(t).items():
            total[k] += v / len(trials)
    return dict(total)


def _differences(
    times_a: Sequence[Mapping[tuple[str, str, str], float]],
    times_b: Sequence[Mapping[tuple[str, str, str], float]],
    cpu: tuple[Sequence[float], Sequence[float]],
    design: str,
    alpha: float,
) -> AttributionDiff:
    cpu_a, cpu_b = float(np.mean(cpu[0])), float(np.mean(cpu[1]))
    keys = _tested_keys(times_a, times_b, (cpu_a + cpu_b) / 2)
    xa, xb = _matrix(times_a, keys), _matrix(times_b, keys)
    diff, se, df, p = _tests(xa, xb, design == "paired")
    q = np.array(bh_adjust(list(p)), dtype=float) if keys else np.zeros(0)
    claimed = q <= alpha
    functions = _rows(keys, xa, xb, diff, se, df, p, q, claimed, alpha)
    return AttributionDiff(
        design=design,
        n_a=len(times_a),
        n_b=len(times_b),
        cpu_a_s=cpu_a,
        cpu_b_s=cpu_b,
        alpha=alpha,
        tested=len(keys),
        functions=functions,
    )


def _rows(
    keys: Sequence[tuple[str, str, str]],
    xa: np.ndarray,
    xb: np.ndarray,
    diff: np.ndarray,
    se: np.ndarray,
    df: np.ndarray,
    p: np.ndarray,
    q: np.ndarray,
    claimed: np.ndarray,
    alpha: float,
) -> tuple[FunctionDiff, ...]:
    from scipy import stats

    m = max(len(keys), 1)
    # Benjamini-Yekutieli: the claimed functions' intervals at 1 - R*alpha/m cover their true differences with
    # false coverage rate <= alpha; with no claim, R = 1 (every interval then includes 0).
    level = 1 - max(int(claimed.sum()), 1) * alpha / m
    half = stats.t.ppf(1 - (1 - level) / 2, df) * se if keys else np.zeros(0)
    rows = [
        FunctionDiff(
            function=k[0],
            space=k[1],
            mode=k[2],
            a_s=float(xa[:, i].mean()),
            b_s=float(xb[:, i].mean()),
            diff_s=float(diff[i]),
            low_s=float(diff[i] - half[i]),
            high_s=float(diff[i] + half[i]),
            p_value=float(p[i]),
            q_value=float(q[i]),
            claimed=bool(claimed[i]),
        )
        for i, k in enumerate(keys)
    ]
    order = {mode: i for i, mode in enumerate(MODES)}
    return tuple(sorted(rows, key=lambda r: (order[r.mode], -abs(r.diff_s), r.function)))
