"""The minimum detectable effect a verdict states: "this run would detect a change of ±X% with 80% power".

The change a t test detects with probability 80% depends on the true σ, and a run only has an estimate s of it
with df degrees of freedom. The old statement, (t_α + t_0.8)·s·√(…), was the normal-theory formula at σ = s: a
repeat of the same design at that change detected it 57–78% of the time (57% for 2 vs 2 boots), because s is as
often below σ as above and the power curve is steeper below 80% than above.

Here X = c·se with the factor c chosen so that a repeat of the design at the stated change detects it with 80%
probability on average over what σ could be given s: E over s/σ ~ √(χ²_df/df) of the noncentral t's power
P(|T'(df, c·s/σ)| > t_α) = 0.8. So "80% power" is what a simulation of the design at its own stated MDE finds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from importlib.resources import files
from typing import TYPE_CHECKING

import numpy as np

from fairmark.stats import special
from fairmark.stats.arrays import Floats
from fairmark.stats.stopping import Capped
from fairmark.stats.tdist import t_quantile
from fairmark.stats.tlight import t_isf

if TYPE_CHECKING:  # annotations only (stats/arrays.py says why)
    import numpy.typing as npt

POWER = 0.80
LEAN_MIN_DF = 3.0  # below, special.lean() still asks scipy (see mde_factor)
_BINS = 96  # equal-probability bins of the χ² distribution of s²/σ² (the expectation's quadrature)
# The factors of the default level and power for every df key up to SHIPPED_UP_TO, as `_factor` computes them
# (scripts/mde_table.py writes them; tests/test_stats_tlight.py recomputes some): a verdict's MDE needs no scipy
# (its import was a quarter of `fairmark show`'s CPU and 17 MB). Other levels and larger df are computed.
SHIPPED_FILE = "mde_factors.npy"  # row 0 the keys, row 1 the factors (.npy: np.load opens no zip)
SHIPPED_LEVEL = 95.0
SHIPPED_UP_TO = 20_000


def _mean_power(c: float, df: float, t_crit: float, u: Floats) -> float:
    return float(np.mean(np.clip(special.t_power(df, c * np.sqrt(u), t_crit), 0.0, 1.0)))


@functools.cache
def _factor(df: float, confidence: float, power: float, lean: bool = False) -> float:
    """The bisection below, whose result (the upper end of its last bracket) both paths give bit for bit: with
    scipy it asks the mean power at every midpoint; inside special.lean() — each power there costs 1–30 ms of
    quadrature — it finds the root once (regula falsi) and replays the bisection's comparisons against it."""
    t_crit = special.stdtrit(df, 1.0 - (1.0 - confidence / 100.0) / 2.0)
    p = (np.arange(_BINS) + 0.5) / _BINS
    u = special.chi2_upper_quantiles(df, p) / df  # s²/σ² at the bins' midpoints
    low, high = 0.0, t_crit + 1.0
    while _mean_power(high, df, t_crit, u) < power:
        low, high = high, high * 2.0
        if high > 1e6:
            return math.inf
    root = _root(lambda c: _mean_power(c, df, t_crit, u) - power, low, high) if lean else math.nan
    while (
        high - low > 1e-5 * high
    ):  # the mean power rises with c: bisection (no scipy.optimize import, 0.15 s)
        mid = (low + high) / 2.0
        below = mid < root if lean else _mean_power(mid, df, t_crit, u) < power
        low, high = (mid, high) if below else (low, mid)
    return high


def _root(f: Callable[[float], float], low: float, high: float) -> float:
    """The root of an increasing f in [low, high] to 1e-12 relative (the Illinois variant of regula falsi)."""
    f_low, f_high = f(low), f(high)
    side = 0
    for _ in range(100):
        if f_high == f_low:
            break
        mid = (low * f_high - high * f_low) / (f_high - f_low)
        f_mid = f(mid)
        if f_mid < 0:
            low, f_low = mid, f_mid
            f_high = f_high / 2 if side == -1 else f_high
            side = -1
        else:
            high, f_high = mid, f_mid
            f_low = f_low / 2 if side == 1 else f_low
            side = 1
        if high - low <= 1e-12 * high or f_mid == 0:
            return mid
    return (low + high) / 2.0


def mde_factor(df: float, confidence: float, power: float = POWER) -> float:
    """c such that a repeat of a t test with `df` degrees of freedom detects a change of c·se (se as estimated)
    with probability `power` on average; inf when no finite change can be detected (df < 1)."""
    if not math.isfinite(df) or df < 1:
        return math.inf
    # Rounded so that Welch's fractional df share a handful of cached roots (the factor moves < 0.1% per 0.05).
    key = min(df_key(df), 1e6)
    if float(confidence) == SHIPPED_LEVEL and float(power) == POWER:
        if key > SHIPPED_UP_TO:
            return _beyond_table(key)
        shipped = _shipped().get(key)
        if shipped is not None:
            return shipped
    if special.is_lean() and key < LEAN_MIN_DF:
        # 2 or 3 values a side: the quadrature needs thousands of nodes at t ≥ 4.3; scipy's nctdtr is faster
        with special.general():
            return _factor(key, float(confidence), float(power), False)
    return _factor(key, float(confidence), float(power), special.is_lean())


# The shipped factor at SHIPPED_UP_TO (tests/test_stats_tlight.py checks it is the table's).
FACTOR_AT_TOP = 2.801839053412964


def _beyond_table(key: float) -> float:
    """The default level's factor above the table: linear in 1/df between the table's last factor and the normal
    limit z₀.₉₇₅ + z₀.₈ (df → ∞), within the bisection's own width (1e-5) of `_factor` there — 5.2e-6 at df
    2e5, where `compare` of two 100 000-line files spent 75 ms of its CPU on the quadrature."""
    limit = t_isf(math.inf, (1.0 - SHIPPED_LEVEL / 100.0) / 2.0) + t_isf(math.inf, 1.0 - POWER)
    return limit + (FACTOR_AT_TOP - limit) * (SHIPPED_UP_TO / key)


def df_key(df: float) -> float:
    return round(df * 20) / 20 if df < 200 else round(df, -1)


def shipped_keys() -> list[float]:
    """Every df key below SHIPPED_UP_TO (from df 1), ascending: those the shipped table holds."""
    return sorted({k / 20 for k in range(20, 4000)} | {float(d) for d in range(200, SHIPPED_UP_TO + 1, 10)})


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[float, float]:
    # a .npy: opening the .npz (a zip archive: np.load then imports zipfile, lzma, bz2) was 0.26 s of 0.81 s in
    # a profile of `compare` of two 7-line files (load 30)
    with files("fairmark.stats").joinpath(SHIPPED_FILE).open("rb") as f:
        keys, factors = np.load(f)
    return dict(zip(keys.tolist(), factors.tolist(), strict=True))


def two_stage_factor(first_df: float, all_df: float, confidence: float, power: float = POWER) -> float:
    """c such that a repeat of a two-stage paired run that ran to its planned length detects a change of c·se
    with probability `power`, se being all rounds' standard error (all_df degrees of freedom): the verdict needs
    Stein's test — its spread from the first stage (first_df) — and the test with all rounds' spread to reject,
    so the repeat's threshold is the larger of t(first_df)·v and t(all_df)·w, v and w those spreads over σ; σ is
    averaged over what it could be given all rounds' spread (issue 31 item 7). The first stage's own spread
    alone, (t + t₀.₈)·se, stated a change such runs detected 76.7% [74.8, 78.5] of the time; this one 82.4%
    [79.9, 84.6] (bench/verdict_simulation.py, 1000 runs, load 20–31). Not for runs cut at max_trials: a repeat
    of those usually plans fewer rounds than they ran (their first stage overestimated the spread), and this
    factor at their length stated a change detected 69.2% [66.3, 72.0] of the time: theirs is capped_factor's,
    a simulated repeat under their stopping rule."""
    if not (math.isfinite(first_df) and math.isfinite(all_df)) or min(first_df, all_df) < 1:
        return math.inf
    return _two_stage(float(first_df), float(all_df), float(confidence), float(power))


_SPREAD_BINS = 32  # equal-probability bins of the repeat's two spreads (96 × 32 × 32 powers per look)


@functools.cache
def _two_stage(first_df: float, all_df: float, confidence: float, power: float) -> float:
    """The factor by bisection on the mean power over the repeat's two spreads (v, w) and σ given all rounds'
    spread (u), every piece without scipy (tlight's t, special's lean χ² quantiles and Φ): `show` of
    a run that stopped at its planned length loaded scipy.special for this alone (issue 34 item 15)."""
    q = (1.0 - confidence / 100.0) / 2.0
    t_first, t_all = t_isf(first_df, q), t_isf(all_df, q)
    mid = (np.arange(_SPREAD_BINS) + 0.5) / _SPREAD_BINS
    v = np.sqrt(_chi2_upper(first_df, mid) / first_df)
    w = np.sqrt(_chi2_upper(all_df, mid) / all_df)
    reach = np.maximum(t_first * v[:, None], t_all * w[None, :]).ravel()
    root_u = np.sqrt(_chi2_upper(all_df, (np.arange(_BINS) + 0.5) / _BINS) / all_df)[:, None]

    def mean_power(c: float) -> float:
        lam = c * root_u
        return float(np.mean(special.normal_cdf(lam - reach) + special.normal_cdf(-lam - reach)))

    low, high = 0.0, t_first + 1.0
    while mean_power(high) < power:
        low, high = high, high * 2.0
        if high > 1e6:
            return math.inf
    # The root once (regula falsi, ~8 looks), then the bisection's comparisons replayed against it: the bracket
    # the bisection on mean_power itself ends on (as _factor does), at a third of the looks.
    root = _root(lambda c: mean_power(c) - power, low, high)
    while high - low > 1e-5 * high:
        mid_c = (low + high) / 2.0
        low, high = (mid_c, high) if mid_c < root else (low, mid_c)
    return high


def _chi2_upper(df: float, p: Floats) -> Floats:
    """x with P(χ²_df > x) = p (scipy's chdtri), by special's series (agreeing with it to 1e-10)."""
    return 2.0 * special._gamma_upper_quantiles(df / 2.0, np.asarray(p, dtype=np.float64))


_REPEATS = 8192  # simulated repeats of the run's design (the factor's Monte Carlo error: ~0.3%)
_SEED = 31  # fixed: the same run states the same MDE every time it is shown


def capped_factor(
    cells: tuple[Floats, Floats], scale: tuple[float, float], first: int, capped: Capped, confidence: float
) -> float:
    """c such that a repeat of a run cut at max_trials detects a change of c·se (se all rounds' standard error)
    with probability POWER, averaged over what σ could be given all rounds' spread.

    A repeat does not run max_trials rounds again: its own first stage plans its length, and it usually plans
    fewer (this run's first stage overstated the spread, which is why it was cut). So the repeat is simulated
    as the runner would run it: the two cells' values in a first stage of `first` rounds, drawn with the
    covariance all rounds of this run show (its σ scaled by √(χ²/df)), the length the stopping rule plans from
    their spreads (scale: what a cell's spread is divided by to give its CV — 1 on the log scale, the cell's
    mean on the raw), then both parts of the two-stage test at that length. Each part's own MDE, the larger,
    stated a change detected 84.9% [82.5, 87.0] of the time in such runs; the two-stage factor at their own
    length 69.2% (docs/statistics.md has the simulation at this rule)."""
    ya, yb = cells
    n = ya.size
    cov = np.cov(ya, yb, ddof=1)
    var_d = float(cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    if not (n >= 3 and first >= 2 and var_d > 0 and math.isfinite(var_d)):
        return math.inf
    rng = np.random.default_rng(_SEED)
    u = rng.chisquare(n - 1, _REPEATS) / (n - 1)  # s²/σ²: σ given all rounds' spread
    e = rng.standard_normal((_REPEATS, first, 2)) @ _cholesky(cov).T
    e /= np.sqrt(u)[:, None, None]
    cv = np.std(e, axis=1, ddof=1) / np.asarray(scale)
    length = _planned_length(np.max(cv, axis=1), first, capped, confidence)
    s1 = np.std(e[:, :, 1] - e[:, :, 0], axis=1, ddof=1)  # the repeat's Stein spread
    more = np.where(length > first, rng.chisquare(np.maximum(length - first, 1)), 0.0) * var_d / u
    s_all = np.sqrt(((first - 1) * s1 * s1 + more) / (length - 1))
    q = (1.0 - confidence / 100.0) / 2.0
    t_all = _t_by_df(capped.max_trials, float(confidence), False)
    reach = np.maximum(t_isf(first - 1.0, q) * s1, np.where(length > first, t_all[length - 1] * s_all, 0.0))
    sd_mean = np.sqrt(var_d / u / length)  # the repeat's mean difference: its sd
    reach_z, se = reach / np.sqrt(length) / sd_mean, math.sqrt(var_d / n)

    def mean_power(c: float) -> float:
        lam = c * se / sd_mean
        return float(np.mean(special.normal_cdf(lam - reach_z) + special.normal_cdf(-lam - reach_z)))

    high = 1.0
    while mean_power(high) < POWER:
        high *= 2.0
        if high > 1e6:
            return math.inf
    return _root(lambda c: mean_power(c) - POWER, 0.0, high)


def _planned_length(cv: Floats, first: int, capped: Capped, confidence: float) -> npt.NDArray[np.int64]:
    """The rounds stats.stopping.group_stop runs to for the largest CV of a first stage: the least n ≥ 3 whose
    CI half-width t(n−1)·cv/√n is within the target, within [first, max_trials]."""
    p = capped.target_ci_pct / 100.0
    sizes = np.arange(3, capped.max_trials + 1)
    reach = (
        p * np.sqrt(sizes) / _t_by_df(capped.max_trials, float(confidence), True)[sizes - 1]
    )  # rises with n
    need = sizes[np.minimum(np.searchsorted(reach, cv, side="left"), sizes.size - 1)]
    need = np.where(cv > reach[-1], capped.max_trials, need)
    return np.asarray(np.clip(need, first, capped.max_trials), dtype=np.int64)


def _cholesky(cov: Floats) -> Floats:
    """The lower triangle L of a 2×2 covariance, L·Lᵀ = cov, also where it is singular (a constant cell, or two
    cells that move together exactly), where numpy's refuses."""
    a = math.sqrt(max(float(cov[0, 0]), 0.0))
    b = float(cov[1, 0]) / a if a > 0 else 0.0
    return np.array([[a, 0.0], [b, math.sqrt(max(float(cov[1, 1]) - b * b, 0.0))]])


_EXACT_DF = 400  # above, Student t's quantile by its Cornish–Fisher expansion


@functools.lru_cache(maxsize=64)
def _t_by_df(top: int, confidence: float, stopping: bool) -> Floats:
    """The two-sided t at df = 0…top (nan at 0): the stopping rule's (stats.tdist.t_quantile: ministat's table up
    to df 100) when `stopping`, the exact quantile otherwise; above df 400 by the Cornish–Fisher expansion in 1/df
    (Abramowitz & Stegun 26.7.5, four terms), within 1e-12 of the quantile there — a run of 100 000 trials would
    otherwise ask tlight 100 000 times."""
    q = (1.0 - confidence / 100.0) / 2.0
    exact = [
        t_quantile(confidence, d) if stopping else t_isf(float(d), q)
        for d in range(1, min(top, _EXACT_DF) + 1)
    ]
    nu = np.arange(_EXACT_DF + 1, top + 1, dtype=np.float64)
    z = t_isf(math.inf, q)
    g = (
        (z**3 + z) / 4.0,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96.0,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0,
    )
    tail = z + g[0] / nu + g[1] / nu**2 + g[2] / nu**3 + g[3] / nu**4
    return np.concatenate([[math.nan], exact, tail])
