"""Change points in a performance history: binary segmentation, each segment's best split tested against AR(1)
noise up to φ 0.6 — by a despiked, autocorrelation-studentized two-sample t past SHORT points, and up to it by
a Bayes factor of steps against drift (stats/changepoint_bayes.py: 20 points cannot estimate φ well enough for the
t to keep its power, and it lets two close steps be seen together).

The method the field uses (MongoDB's `signal-processing-algorithms`, Apache Otava) is e-divisive means with a
permutation test; fairmark used it too, with a guard against drift. Cross-checked on Otava's series, its one real
history (tigerbeetle, 365 runs) and simulated ones, that design failed in four ways this one is built against:

- **An outlier disabled detection.** A newest run ×1.3 hid an older −10% step: the drift guard was scaled by the
  points' root mean square. Here each point is first held within HAMPEL_K robust standard deviations of the median
  of its five neighbours, or replaced by it past HAMPEL_OUT (a Hampel filter; the scale is the root mean square
  of the first differences without their largest TRIM share, which a step or an outlier does not inflate — not
  their MAD, too noisy in 20 points): a one-off spike is pulled in, a step stays a step.
- **Permutations assume exchangeable runs**, and a machine that drifts from run to run (lag-1 autocorrelation φ of
  the run means) makes a slow wander look like a step (plain permutations: 22% false alarms at φ 0.6). Here the
  statistic is studentized by the long-run variance factor √((1 + ρ̂)/(1 − ρ̂)), ρ̂ the smaller of two estimates of
  the lag-1 autocorrelation — of the residuals around the split's two means, and from the first and second
  differences (E d₂² / E d₁² = 1 + φ, robust to other steps in the segment, which make the residuals look
  correlated) —, and its p-value is the largest of those of simulated Gaussian AR(1) series with φ in PHI_GRID,
  passed through the same filter and statistic — the drifting ones' divided by drift_allowance(n): the level
  stated holds on independent runs, and under drift false alarms stay within issue 38's 2α. The statistic is
  scale- and location-free, so each null table depends only on the segment's length: computed once per length
  (PHI_GRID × SIMULATIONS series), cached.
- **One rejected split stopped the whole search.** Here a segment whose best split is not significant leaves the
  others searched; and, past DESCENT_PAST runs, its two sides (at that split) are tested once more, at α·DESCENT
  each: a second step nearby makes the first look like drift (tigerbeetle's four steps), and a side shows its
  step alone. A split found so is a boundary like any other, and the segment is searched again on each side of it.
  In 20 runs the two-step model finds a staircase's second step, and the descent's share of the false alarms is
  spent by the top test instead (SHORT_ALLOWANCE).
- **A fixed permutation seed** put three splits of one 20-run series exactly on p = 0.010. The null tables are
  seeded by length, and their 999 series give p-values in steps of 0.001.

The price of a level that holds under drift is power on short series: the table in docs/statistics.md gives the rates
beside Otava's and signal-processing-algorithms', which hold no level under drift. A floor keeps what a
permutation argument says: a split at τ of n runs is one of C(n, τ) ways to choose its sides, so no p-value is
below 2/C(n, τ) — 10 runs at α 0.01 can show a split at 5 and none at 3 or 7 (`undetectable`).
"""

from __future__ import annotations

import functools
import io
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from statistics import NormalDist

import numpy as np

from fairmark.errors import UsageError
from fairmark.stats import changepoint_bayes
from fairmark.stats.arrays import Floats
from fairmark.stats.changepoint_bayes import SHORT
from fairmark.stats.checks import _lag1

MIN_SIZE = 3  # each side of a split has at least this many points (a mean of 2 says little)
PHI_GRID = (0.0, 0.3, 0.6)  # the AR(1) autocorrelations whose null each split must pass
# … at α against independent runs (φ 0: the level stated is the level held there) and, in a segment of up to
# SHORT runs (the Bayes factor's: too few to estimate φ), at α × this against drift (φ > 0): issue 38 allows
# false alarms up to 2α under AR(1) φ 0.3 and 0.6, but where the descent follows a rejection the whole search
# spends more than its top test — at 1.5, 2.1% of 50-run φ 0.6 series showed a change point at α 0.01
# (docs/statistics.md)
DRIFT_ALLOWANCE = 1.25
# … and in a segment of up to DESCENT_PAST runs, where no descent follows: the top test spends the descent's share
# (20-run φ 0.6 series at α 0.05: 7.5% with a change point, against 8.3% with the descent and 1.25)
SHORT_ALLOWANCE = 1.5
# null series per φ and length: p-values in steps of 0.0001 (with 999, which table was drawn moved the power at
# α 0.01 by about ±5 points: bench/changepoint_ablation.py)
SIMULATIONS = 9999
HAMPEL_K = 2.85  # a point further than this many robust sd from its neighbours' median is pulled in to it
HAMPEL_OUT = 4.25  # … and one further than this is replaced by it: a one-off
TRIM = 0.15  # the share of the largest first differences the robust sd leaves out (steps and outliers)
DESCENT = 0.5  # the sides of a rejected split are tested once more, each at α × DESCENT
DESCENT_PAST = 20  # … in a segment longer than this (in 20 runs it bought 0.3 points for 1.9 of false alarms)
EXACT_LENGTHS = 64  # null tables for every length up to this; longer segments use the next tabulated length
LENGTH_STEP = 1.08  # the tabulated lengths past EXACT_LENGTHS grow by this factor (a longer null is stricter)
TAIL = 500  # the largest null statistics kept per table: p-values up to 0.05 are exact, larger ones are 1
# … and per table of SHORT runs or fewer, whose drift p-values are divided by up to SHORT_ALLOWANCE: exact up to 0.075
SHORT_TAIL = math.ceil(TAIL * max(DRIFT_ALLOWANCE, SHORT_ALLOWANCE) - 1e-9)
CHUNK = 1000  # null series simulated at a time (a 64-run chunk's pairs of splits: ~40 MB an array)
# … and at most this many points a chunk: a 2500-run segment's 1000 series peaked at 418 MB RSS (the tables
# do not move: the shipped 323-run one drawn 619 series a chunk is the same bit for bit)
CHUNK_POINTS = 200_000
SHIPPED_UP_TO = 2000  # tables for segments up to this long ship with the package; longer ones are simulated
# … at a segment's first test, from fewer series: 9999 of 2500 runs cost 24 s of CPU, 999 a tenth of it (p-values
# in steps of 0.001, exact up to the same max_alpha())
LONG_SIMULATIONS = 999
SHIPPED_FILE = "changepoint_nulls.npz"


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first point of the new segment
    p_value: (
        float  # max(p against φ 0, p against φ > 0 of PHI_GRID / drift_allowance(n)), ≥ the permutation floor
    )
    statistic: float  # the studentized t of the split
    phi: float = PHI_GRID[-1]  # the largest lag-1 autocorrelation whose noise the split was tested against


def _scale(x: Floats) -> Floats:
    """Each row's robust standard deviation from its first differences (a step moves one difference, an outlier
    two): the root mean square of the differences without their largest TRIM share, made consistent for Gaussian
    noise. Not their MAD: from 19 differences it is off by ±30% (sd), and where it came out small the filter held
    ordinary points in — that cost 3–5 points of power at α 0.01 (docs/statistics.md, issue 38 item 3)."""
    n = x.shape[1]
    drop = min(max(1, round(TRIM * (n - 1))), n - 2)
    d = np.sort(np.abs(np.diff(x, axis=1)), axis=1)[:, : n - 1 - drop]
    scale: Floats = np.sqrt(
        (d * d).mean(axis=1, keepdims=True) / 2 / _kept_share_variance(n - 1 - drop, n - 1)
    )
    return np.maximum(scale, 1e-12 * np.maximum(np.abs(np.median(x, axis=1, keepdims=True)), 1e-300))


@functools.lru_cache(maxsize=256)
def _kept_share_variance(kept: int, of: int) -> float:
    """E[Z² | Z among the share kept/of of a standard normal nearest 0]: the trimmed mean square's consistency
    factor (1 when nothing is left out)."""
    if kept >= of:
        return 1.0
    q = kept / of
    a = NormalDist().inv_cdf((1 + q) / 2)
    return 1 - 2 * a * math.exp(-a * a / 2) / math.sqrt(2 * math.pi) / q


def _median5(a: Floats, b: Floats, c: Floats, d: Floats, e: Floats) -> Floats:
    """The element-wise median of five arrays: the middle two of a…d (the larger low, the smaller high of the
    pairs) and e, the median of those three (a few min/max passes instead of a sort per window)."""
    f = np.maximum(np.minimum(a, b), np.minimum(c, d))
    g = np.minimum(np.maximum(a, b), np.maximum(c, d))
    m: Floats = np.maximum(np.minimum(e, f), np.minimum(np.maximum(e, f), g))
    return m


def _despiked(x: Floats) -> Floats:
    """Rows of x in units of their robust sd, each point held within HAMPEL_K of its five-point running median
    (three or four points at the ends), or replaced by it past HAMPEL_OUT: a clipped outlier still stood HAMPEL_K
    sd off, and a +10% step with a newest run x1.3 in 20 runs (sd 3%) was found 36% of the time at α 0.01."""
    s = _scale(x)
    n = x.shape[1]
    pad = np.concatenate([x[:, :1], x[:, :1], x, x[:, -1:], x[:, -1:]], axis=1)
    med = _median5(*(pad[:, k : k + n] for k in range(5)))
    med[:, 0], med[:, 1] = np.median(x[:, :3], axis=1), np.median(x[:, :4], axis=1)
    med[:, -1], med[:, -2] = np.median(x[:, -3:], axis=1), np.median(x[:, -4:], axis=1)
    d = x - med
    kept = med + np.clip(d, -HAMPEL_K * s, HAMPEL_K * s)
    held: Floats = np.where(np.abs(d) > HAMPEL_OUT * s, med, kept) / s
    return held


def _rho(u: Floats, at: Floats, left: Floats, right: Floats) -> Floats:
    """The smaller of the residuals' lag-1 autocorrelation (bias-corrected for n and the two fitted means) and
    the difference-based one, held within [0, 0.9]."""
    n = u.shape[1]
    res = np.where(np.arange(n)[None, :] < at[:, None], u - left[:, None], u - right[:, None])
    r1 = (res[:, 1:] * res[:, :-1]).sum(axis=1) / np.maximum((res * res).sum(axis=1), 1e-300)
    r1 = r1 + (1 + 3 * r1) / n + 2.0 / n
    d1, d2 = np.diff(u, axis=1), u[:, 2:] - u[:, :-2]
    rd = np.median(d2 * d2, axis=1) / np.maximum(np.median(d1 * d1, axis=1), 1e-300) - 1
    rho: Floats = np.clip(np.minimum(r1, rd), 0.0, 0.9)
    return rho


def _statistic(x: Floats) -> tuple[Floats, Floats]:
    """Each row's (studentized |t| of its best split, that split) — rows of x shaped (R, n)."""
    r, n = x.shape
    u = _despiked(x)
    if n <= changepoint_bayes.SHORT:
        return changepoint_bayes.statistic(u, MIN_SIZE)
    c1 = np.concatenate([np.zeros((r, 1)), np.cumsum(u, axis=1)], axis=1)
    c2 = np.concatenate([np.zeros((r, 1)), np.cumsum(u * u, axis=1)], axis=1)
    tau = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    m1, m2 = c1[:, tau] / tau, (c1[:, n:] - c1[:, tau]) / (n - tau)
    ss = (c2[:, tau] - tau * m1 * m1) + (c2[:, n:] - c2[:, tau] - (n - tau) * m2 * m2)
    t = (m2 - m1) / (np.sqrt(np.maximum(ss, 1e-300) / (n - 2)) * np.sqrt(1 / tau + 1 / (n - tau)))
    best = np.argmax(np.abs(t), axis=1)
    rows = np.arange(r)
    at = MIN_SIZE + best
    rho = _rho(u, at, m1[rows, best], m2[rows, best])
    studentized: Floats = np.abs(t[rows, best]) / np.sqrt((1 + rho) / (1 - rho))
    return studentized, at


def tabulated(n: int) -> int:
    """The length whose null table a segment of n points uses: n itself up to EXACT_LENGTHS, past it the next
    length of a geometric grid (a longer segment has more splits to maximize over: its null is the stricter)."""
    if n <= EXACT_LENGTHS:
        return n
    k = math.ceil(math.log(n / EXACT_LENGTHS) / math.log(LENGTH_STEP) - 1e-9)
    return math.ceil(EXACT_LENGTHS * LENGTH_STEP**k - 1e-9)


def tabulated_lengths() -> list[int]:
    """Every length the shipped tables hold (scripts/changepoint_tables.py writes them)."""
    return sorted({tabulated(n) for n in range(2 * MIN_SIZE, SHIPPED_UP_TO + 1)})


def simulate_null(n: int) -> Floats:
    """The largest statistics (_simulations(n): TAIL, SHORT_TAIL up to SHORT points), ascending, of SIMULATIONS
    Gaussian AR(1) series of n points for each φ of PHI_GRID: shape (len(PHI_GRID), that many). Seeded by n alone:
    the same on every machine and every call (drawn CHUNK series, at most CHUNK_POINTS points, at a time from one
    generator: the same numbers as in one draw, in a bounded memory)."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(7_919 * n + 1)
    simulations, tail = _simulations(n)
    tables = []
    for phi in PHI_GRID:
        stats = []
        chunk = max(1, min(CHUNK, CHUNK_POINTS // n))
        for k in range(0, simulations, chunk):
            e = rng.standard_normal((min(chunk, simulations - k), n))
            e[:, 0] /= math.sqrt(1 - phi * phi)  # a stationary start
            z = lfilter([math.sqrt(1 - phi * phi)], [1.0, -phi], e, axis=1)
            stats.append(_statistic(z)[0])
        tables.append(np.sort(np.concatenate(stats))[-tail:])
    return np.array(tables)


def _simulations(n: int) -> tuple[int, int]:
    """(series, largest kept) of a tabulated length's null tables: SIMULATIONS and SHORT_TAIL (up to SHORT
    points) or TAIL for the shipped ones, LONG_SIMULATIONS and as many as keep p exact up to max_alpha() past them."""
    if n <= SHORT:
        return SIMULATIONS, SHORT_TAIL
    if n <= tabulated(SHIPPED_UP_TO):
        return SIMULATIONS, TAIL
    return LONG_SIMULATIONS, round(TAIL * (LONG_SIMULATIONS + 1) / (SIMULATIONS + 1))


@functools.lru_cache(maxsize=1)
def _shipped() -> np.lib.npyio.NpzFile:
    """The shipped tables (1.2 MB), one member a length, each decompressed only when a segment of its length is
    tested: opening ~3 ms of CPU, a 20-run history's 15 lengths ~3 ms more, all 104 ~20 ms."""
    tables: np.lib.npyio.NpzFile = np.load(
        io.BytesIO(files("fairmark.stats").joinpath(SHIPPED_FILE).read_bytes())
    )
    return tables


def _shipped_table(n: int) -> Floats | None:
    key = f"n{n}"
    table: Floats | None = _shipped()[key] if key in _shipped().files else None
    return table


@functools.lru_cache(maxsize=64)
def _null(n: int) -> Floats:
    """The null tables of a tabulated length: shipped up to SHIPPED_UP_TO points, simulated past it."""
    shipped = _shipped_table(n)
    return shipped if shipped is not None else simulate_null(n)


def drift_allowance(n: int) -> float:
    """The factor a segment of n runs divides its p-values against drift by at the stated level: SHORT_ALLOWANCE
    up to DESCENT_PAST runs (no descent follows), DRIFT_ALLOWANCE past it (the descent spends the rest)."""
    return SHORT_ALLOWANCE if n <= DESCENT_PAST else DRIFT_ALLOWANCE


def _test(x: Floats, allowance: float | None = None) -> tuple[float, int, float]:
    """(p, split, statistic) of a segment's best split, before the permutation floor (against drift divided by
    `allowance`, by default drift_allowance(n)). p is 1.0 when the statistic is below the tables' tails
    (p > max_alpha(): the exceedances past the tail are not counted)."""
    stat, at = _statistic(x[None, :])
    t = float(stat[0])
    return _p_value(t, x.size, drift_allowance(x.size) if allowance is None else allowance), int(at[0]), t


def _p_value(t: float, n: int, allowance: float = DRIFT_ALLOWANCE) -> float:
    """max(p at φ 0, the largest p at φ > 0 of PHI_GRID / allowance), each p = (1 + the null statistics of n
    points at least t) / (series + 1); 1.0 when that exceeds max_alpha() (past the tails the count of
    exceedances is unknown, and no level tests it). The allowance applies up to SHORT points: a longer segment
    estimates its own autocorrelation (the t's studentization), and its tables keep TAIL statistics only."""
    simulations, tail = _simulations(tabulated(n))
    exceed = [tail - int(np.searchsorted(table, t - 1e-12 * abs(t))) for table in _null(tabulated(n))]
    ps = [(1 + k) / (simulations + 1) if k < tail else math.inf for k in exceed]
    p = max(ps[0], max(ps[1:]) / (allowance if n <= SHORT else 1.0))
    return p if p <= max_alpha() else 1.0


def detect(values: Sequence[float], *, alpha: float = 0.05) -> list[ChangePoint]:
    """The significant change points of `values`, in order: binary segmentation, every segment searched."""
    check_alpha(alpha)
    x = np.asarray(values, dtype=float)
    found: list[ChangePoint] = []
    todo = [(0, x.size)]
    while todo:
        a, b = todo.pop()
        splits = _split(x, a, b, alpha)
        found += splits
        bounds = [a, *(c.index for c in splits), b]
        todo += list(itertools.pairwise(bounds)) if splits else []
    return sorted(found, key=lambda c: c.index)


def _split(x: Floats, a: int, b: int, alpha: float) -> list[ChangePoint]:
    """The segment's best split when it is significant at α (α × drift_allowance(n) against drift; with a second
    one when two steps are the more probable explanation of a short segment); else, in a segment longer than
    DESCENT_PAST, the best split of one of its two sides (at that split; the earlier side first) when it is
    significant at α·DESCENT against every φ alike — then the segment is searched again between them. The
    descent is held to the strict level: with the allowance there too, 50-run φ 0.6 series showed a change point
    1.8% of the time at α 0.01 (1.4% without)."""
    tries = [(a, b, alpha)]
    while tries:
        lo, hi, level = tries.pop(0)
        if hi - lo < 2 * MIN_SIZE:
            continue
        n = hi - lo
        p, tau, t = _test(x[lo:hi], drift_allowance(n) if level == alpha else 1.0)
        if max(p, 2 / math.comb(n, tau)) <= level:
            pair = (
                changepoint_bayes.two_splits(_despiked(x[None, lo:hi])[0], MIN_SIZE) if n <= SHORT else None
            )
            taus = (
                [s for s in pair if max(p, 2 / math.comb(n, s)) <= level] if pair and tau in pair else [tau]
            )
            return [ChangePoint(index=lo + s, p_value=max(p, 2 / math.comb(n, s)), statistic=t) for s in taus]
        if level == alpha and n > DESCENT_PAST:
            tries = [(lo, lo + tau, alpha * DESCENT), (lo + tau, hi, alpha * DESCENT)]
    return []


def max_alpha() -> float:
    """The largest level a split can be tested at: p-values up to it are exact, above it they read 1."""
    return TAIL / (SIMULATIONS + 1)


def check_alpha(alpha: float) -> None:
    """Refuse a level the tables cannot test at (it would be tested at max_alpha() and say it was not)."""
    if alpha > max_alpha():
        raise UsageError(
            f"α = {alpha:g}: change points are tested at levels up to {max_alpha():g} (their null tables keep "
            f"the {TAIL} largest of {SIMULATIONS} statistics: larger p-values are not counted)",
            hint=f"--alpha {max_alpha():g} or less",
        )


def min_p_value(n: int) -> float:
    """The smallest p-value a series of n points can reach: the permutation floor at its middle split, or one
    step of the null tables."""
    if n < 2 * MIN_SIZE:
        return 1.0
    return max(2 / math.comb(n, n // 2), 1 / (_simulations(tabulated(n))[0] + 1))


def undetectable(n: int, alpha: float) -> list[int]:
    """The splits τ (the new level's first point, 1 … n − 1) at which no step of any size can be shown at `alpha`
    in a series of n points: fewer than MIN_SIZE points on a side, or a permutation floor 2/C(n, τ) above α (10
    runs at α 0.01: τ = 3 and 7 reach only 0.017)."""
    floor = min_p_value(n)
    return [
        tau
        for tau in range(1, n)
        if min(tau, n - tau) < MIN_SIZE or max(2 / math.comb(n, tau), floor) > alpha
    ]


def shortest_for(alpha: float) -> int | None:
    """The fewest points in which a change point can be shown at `alpha` (None: in no series of 1000 points)."""
    return next((n for n in range(2 * MIN_SIZE, 1001) if min_p_value(n) <= alpha), None)


def serial_correlation(values: Sequence[float], found: Sequence[ChangePoint]) -> tuple[float, float] | None:
    """(lag-1 r, its one-sided p) when the points around the found segments' means are serially correlated
    (p < 0.05): a machine that drifts from run to run can look like a step. None otherwise."""
    x = np.asarray(values, dtype=float)
    if x.size < 8:
        return None
    bounds = [0, *(c.index for c in found), x.size]
    r = np.concatenate([x[a:b] - x[a:b].mean() for a, b in itertools.pairwise(bounds)])

    r1, p = _lag1(r)
    if p >= 0.05:
        return None
    return r1, p
