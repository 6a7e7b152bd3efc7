"""Runs, boots and hosts as levels: trials nested in runs, nested in boots, nested in hosts (Kalibera & Jones,
"Rigorous benchmarking in reasonable time", ISMM 2013) — one model for every verdict path.

Trials interleaved round by round inside one run are paired by round (stats.paired). Anything measured apart is
not: two runs (minutes or days apart: a daemon, the page cache, thermal state, memory layout), two boots (page
placement, hash seeds, the kernel's own ASLR) and two hosts each add their own offset, and treating the trials of
two runs as independent samples of one distribution turns that offset into a "difference":

    y = μ_side + η_host + β_boot + ρ_run + ε_trial      (each offset with its own variance)

The caller gives each value's unit at every level it knows (`labels`: host, boot, run — whatever the store
recorded); `unit_level` picks the **highest level at which the two sides were not measured in the same units**,
and the verdict takes each unit's mean as one observation (its spread holds every level below it, so no
variance component needs estimating for the test to hold its level):

* ≥ 2 units on both sides: Welch's t on the unit means (unequal spreads and unit counts allowed; on the
  logarithms when positive), in ratio form;
* 1 unit on one side, ≥ 2 on the other: the single unit against the others' spread (a prediction interval: it
  assumes the single unit varies like the others, as the runs of one plan on one host do);
* 1 unit per side: the unit-to-unit variance is unknown, so **no claim is made**; the difference is shown with
  the interval of the level below (within the unit), labelled as what it is — a lower bound on the uncertainty.

The variance at each level is reported per side and on the test's scale (logarithms when every value is
positive): a one-way analysis of variance of each side's units (method of moments, floored at 0) gives the
unit-to-unit share of a unit mean's variance with its exact F interval, and where the next repetitions buy most
precision: more units, or more trials per unit. Pooled over the sides on the raw scale it said "0% of a boot
mean's variance is boot-to-boot" for boots whose means were 0.12, 0.13, 0.02 and 0.04 s, because the other
side's boots, 20 times slower, had a within-boot spread that swamped them (issue 34).
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import files
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np

from fairmark.stats.arrays import Floats, Unit, Values, known
from fairmark.stats.describe import pooled_var
from fairmark.stats.paired import (
    UNIT_DESIGNS,
    Part,
    RatioTest,
    _log_part,
    combine,
    means_part,
    on_scale,
    positive,
    ratio_of,
    two_sided_p,
    welch,
    welch_part,
)
from fairmark.stats.power import mde_factor
from fairmark.stats.timeorder import TimeOrder, time_order
from fairmark.stats.tlight import f_ppf, t_isf, t_sf

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject

LEVELS = ("host", "boot", "run")  # outermost first; below them: rounds (paired) and trials
Labels: TypeAlias = Mapping[
    str, tuple[Sequence[Unit], Sequence[Unit]]
]  # level → each side's unit of each value


def unit_level(labels: Labels | None) -> str | None:
    """The highest level (host, boot, run) whose units differ between the sides, i.e. the sides were not both
    measured in exactly the same units there; None when they share every known unit (one run: the trial level).
    A level with an unknown unit (None) on either side is skipped: it cannot be told. Hosts are a level only when
    a side has several: one host per side is what is being compared (this machine against that one), while runs
    and boots are never the thing compared, only what it was measured in."""
    for level in LEVELS:
        pair = (labels or {}).get(level)
        if not (pair and known(pair[0]) and known(pair[1]) and set(pair[0]) != set(pair[1])):
            continue
        if level == "host" and max(len(set(pair[0])), len(set(pair[1]))) < 2:
            continue
        return level
    return None


@dataclass(frozen=True)
class Split:
    """One side's units on the test's scale (`Levels.scale`): a unit mean's variance split into the unit-to-unit
    part and the trials' (one-way analysis of variance, method of moments), and the unit-to-unit share of it with
    its interval (exact for equal trials per unit: (1 − share)·F follows F(k − 1, N − k))."""

    units: int
    per_unit: float  # n₀, the trials per unit the split is for (their mean with equal counts)
    sd_unit: float  # ≥ 0 (nan: fewer than 2 units)
    sd_trial: float  # within the units (nan: no unit has 2 trials)
    share: float  # σ_unit² / (σ_unit² + σ_trial²/n₀) (nan: unknown)
    share_low: float
    share_high: float

    def to_dict(self) -> JSONObject:
        return {
            "n": self.units,
            "per_unit": self.per_unit,
            "sd": _num(self.sd_unit),
            "sd_trial": _num(self.sd_trial),
            "share": _num(self.share),
            "share_ci": [_num(self.share_low), _num(self.share_high)] if math.isfinite(self.share) else None,
        }


@dataclass(frozen=True)
class Levels:
    """Both sides' values described at the unit level and below: the unit means (in the values' unit) and each
    side's variance split on the scale the verdict tests ("log": of the logarithms; "raw": in the values' unit)."""

    unit: str  # "run" | "boot" | "host"
    units_baseline: int
    units_other: int
    trials: int
    unit_means_baseline: tuple[float, ...]
    unit_means_other: tuple[float, ...]
    trials_per_unit: float  # the mean count m
    scale: str = "raw"
    baseline: Split | None = None  # None: no values on that side
    other: Split | None = None
    groups_baseline: tuple[Floats, ...] = field(default=(), repr=False, compare=False)  # values per unit
    groups_other: tuple[Floats, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self, *, advice: Advice | None = None) -> JSONObject:
        sides = {"baseline": self.baseline, "other": self.other}
        return {
            "unit": self.unit,
            "scale": self.scale,  # of every sd and share below (log: of the logarithms of the values)
            "levels": [
                {
                    "level": self.unit,
                    "n": self.units_baseline + self.units_other,
                    "n_baseline": self.units_baseline,
                    "n_other": self.units_other,
                    "means_baseline": list(self.unit_means_baseline),
                    "means_other": list(self.unit_means_other),
                    **{f"split_{k}": v.to_dict() if v else None for k, v in sides.items()},
                },
                {"level": "trial", "n": self.trials, "per_unit": self.trials_per_unit},
            ],
            "advice": advice.to_dict() if advice is not None else None,
        }


@dataclass(frozen=True)
class Advice:
    """Where the next repetitions buy most precision: the standard error of the difference now, with twice the
    units, and with twice the trials per unit; the optimal trials per unit when the costs are known."""

    unit: str  # "run" | "boot" | "host"
    se_now: float
    se_more_units: float
    se_more_trials: float
    scale: str = "raw"  # of the standard errors: "log" (of the log ratio) or "raw" (in the values' unit)
    optimal_trials_per_unit: int | None = None

    @property
    def next(self) -> Literal["units", "trials"]:
        """Where the next repetitions buy most: more units, or more trials per unit (verdict/levels.py words
        it)."""
        return "units" if self.se_more_units < self.se_more_trials else "trials"

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "se_now": self.se_now,
            f"se_twice_the_{self.unit}s": self.se_more_units,
            "se_twice_the_trials_per_unit": self.se_more_trials,
            "next": self.next,  # a code; verdict/levels.py words it in a comparison's JSON
            "scale": self.scale,
        }
        if self.optimal_trials_per_unit is not None:
            out["optimal_trials_per_unit"] = self.optimal_trials_per_unit
        return out


@dataclass(frozen=True)
class WithinBound:
    """One unit per side: the comparison at the level below, shown as a lower bound on the uncertainty."""

    design: str
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    p_value: float
    significant: bool

    def to_dict(self) -> JSONObject:
        return {
            "design": self.design,
            "ratio": _num(self.ratio),
            "ratio_ci_low": _num(self.ratio_ci_low),
            "ratio_ci_high": _num(self.ratio_ci_high),
            "p_value": _num(self.p_value),
            "significant": self.significant,
        }


@dataclass(frozen=True)
class LevelsReport:
    """What a verdict with a unit above the trial rests on (Comparison.levels): the levels, the advice, and with
    one unit per side the comparison within it."""

    levels: Levels
    advice: Advice | None = None
    within_lower_bound: WithinBound | None = None
    order: TimeOrder | None = (
        None  # the units' arrangement in time (a screen says it once: verdict.levels.said_once)
    )

    def to_dict(self) -> JSONObject:
        out = self.levels.to_dict(advice=self.advice)
        if self.within_lower_bound is not None:
            out["within_lower_bound"] = self.within_lower_bound.to_dict()
        return out


def group(values: Values, units: Sequence[Unit]) -> list[Floats]:
    """The values of each unit, in order of first appearance."""
    if len(values) != len(units):
        raise ValueError(f"{len(values)} values but {len(units)} unit labels")
    by: dict[Unit, list[float]] = defaultdict(list)
    for v, u in zip(values, units, strict=True):
        by[u].append(float(v))
    return [np.asarray(v, dtype=float) for v in by.values()]


def levels(
    a: Values,
    units_a: Sequence[Unit],
    b: Values,
    units_b: Sequence[Unit],
    unit: str = "boot",
    *,
    confidence: float = 95.0,
) -> Levels:
    ga, gb = group(a, units_a), group(b, units_b)
    log = positive(*ga, *gb)  # the verdict's scale (unit_test, sequential.unit_ratio_test)

    def on(g: Floats) -> Floats:
        return np.log(g) if log else g

    ma, mb = np.array([g.mean() for g in ga]), np.array([g.mean() for g in gb])
    return Levels(
        unit,
        len(ga),
        len(gb),
        len(a) + len(b),
        tuple(map(float, ma)),
        tuple(map(float, mb)),
        (len(a) + len(b)) / (len(ga) + len(gb)),
        "log" if log else "raw",
        split([on(g) for g in ga], confidence) if ga else None,
        split([on(g) for g in gb], confidence) if gb else None,
        tuple(ga),
        tuple(gb),
    )


def split(groups: Sequence[Floats], confidence: float = 95.0) -> Split:
    """One side's one-way analysis of variance (unequal trials per unit: n₀ = (N − Σnᵢ²/N)/(k − 1)); the share's
    interval from F = MSB/MSW: (1 − share)·F ~ F(k − 1, N − k), so share = 1 − F_q/F at the two quantiles."""
    k, sizes = len(groups), np.array([g.size for g in groups], dtype=float)
    n_all = float(sizes.sum())
    msw, df_w = pooled_var(groups)
    nan = math.nan
    if k < 2:
        return Split(k, n_all, nan, math.sqrt(msw) if df_w else nan, nan, nan, nan)
    means = np.array([g.mean() for g in groups])
    grand = float((sizes * means).sum() / n_all)
    msb = float((sizes * (means - grand) ** 2).sum()) / (k - 1)
    n0 = (n_all - float((sizes**2).sum()) / n_all) / (k - 1)
    if not df_w:  # one trial per unit: the unit means' variance, not split
        return Split(k, n0, nan, nan, nan, nan, nan)
    sd_u = math.sqrt(max((msb - msw) / n0, 0.0))
    if msb == 0:  # no unit differs from another (nor, maybe, any trial): nothing to split
        return Split(k, n0, sd_u, math.sqrt(msw), nan, nan, nan)
    f = msb / msw if msw > 0 else math.inf
    tail = (1 - confidence / 100) / 2

    def share(q: float) -> float:
        return max(0.0, 1.0 - q / f)

    low, high = share(f_ppf(k - 1, df_w, 1 - tail)), share(f_ppf(k - 1, df_w, tail))
    return Split(k, n0, sd_u, math.sqrt(msw), share(1.0), low, high)


def unit_test(lv: Levels, *, confidence: float, inflation: float = 1.0) -> RatioTest | None:
    """The verdict's test with the unit as the observation; None with one unit per side (no unit-to-unit
    variance is known). Two tests must both reject, and the interval is the union of theirs:

    * Welch's t on the unit means (no assumption about either side's spread), with 2–5 units on a side at the
      level α′ of small_alpha (welch_units_df: at 5%, 8.2% false positives at 2 vs 6 boots, the 2 the noisy side);
    * the nested model (Kalibera & Jones): a unit mean varies by σ_unit² + σ_trial²/m, with σ_trial from the
      trials inside the units (many df) and σ_unit pooled over both sides (method of moments) — it weighs
      a unit of 2 trials and one of 40 as they deserve (pooled t on unweighted means: 25% false positives
      at 2 boots × 2 trials vs 6 × 40), but assumes the same unit-to-unit spread on both sides. Alone, with one
      side's boots 10 times as spread, it claims 39–44%; here Welch's part must reject too, so the verdict keeps
      Welch's rate (bench/boots_unequal.py, docs/statistics.md). Each side's own σ_unit would make it Welch's t
      again (identical with equal trials per unit) and lose what the pooling guards (and α′ counts on):
      2.5% at 2 vs 6 boots of equal spread, where Welch alone gives 8.7%.

    With one unit on a side only the nested model can judge (the single unit varies like the others, and by its
    own trials' spread where that is larger)."""
    na, nb = lv.units_baseline, lv.units_other
    if na < 1 or nb < 1 or (na == 1 and nb == 1):
        return None
    ga, gb = list(lv.groups_baseline), list(lv.groups_other)
    log = positive(*ga, *gb)
    xa, xb, c = on_scale(np.array(lv.unit_means_baseline), np.array(lv.unit_means_other), log)
    if log:  # the unit means of the logarithms: the test's scale inside the units too
        ga, gb = [np.log(g) for g in ga], [np.log(g) for g in gb]
        xa, xb = np.array([g.mean() for g in ga]), np.array([g.mean() for g in gb])
    else:
        ga, gb = [g / c for g in ga], [g / c for g in gb]
    nested = _nested_parts(ga, gb, log, c, confidence)
    parts, factor = _welch_parts(xa, xb, log, c, confidence, bool(nested))
    names = ["Welch"] if parts else []
    names += ["the nested model", "its single unit's own trial spread"][: len(nested)]
    parts += nested
    if inflation > 1:  # units measured in blocks on a machine that may drift (stats.timeorder)
        base = float(np.exp(xa.mean()) if log else xa.mean() * c)
        parts = [_widened(q, inflation, log, base, confidence) for q in parts]
    design = UNIT_DESIGNS[lv.unit]
    if not parts:  # every unit mean equal and no spread inside the units: no t test
        return welch(
            np.exp(xa) if log else xa * c,
            np.exp(xb) if log else xb * c,
            confidence=confidence,
            design=design,
            log=log,
        )
    ratio = ratio_of(float(xa.mean()), float(xb.mean()), log)
    test = combine(
        design,
        "log" if log else "raw",
        None,
        parts,
        ratio,
        confidence,
        " and ".join(names) if len(parts) >= 2 else "",
    )
    if factor is None:
        return test
    # the Welch part's detectable change at the level it tests (combine's is at `confidence` on its df)
    others = [mde_factor(q.df, confidence) * q.se for q in parts[1:]]
    return replace(test, mde=max([factor * parts[0].se, *others]))


def _welch_parts(
    xa: Floats, xb: Floats, log: bool, c: float, confidence: float, with_nested: bool
) -> tuple[list[Part], float | None]:
    """Welch's part of unit_test, if any, and with ≥ 2 units a side its detectable change per standard error.
    One unit on a side: Welch's prediction form, only where the nested model cannot judge."""
    if xa.size >= 2 and xb.size >= 2:
        got = _welch_units(xa, xb, log, c, confidence, with_nested=with_nested)
        return ([got[0]], got[1]) if got is not None else ([], None)
    part = None if with_nested else welch_part(xa, xb, log, c, confidence)
    return ([part] if part is not None else []), None


# Welch's t on the unit means with 2–5 units on a side: the level α′ at which the verdict's two parts together
# (Welch's AND the nested model's, the pooled t with equal trials per unit) reject at most the nominal share
# (5% at 95% confidence) of A/A comparisons whatever the ratio of the sides' spreads, by (fewer units, more
# units). Satterthwaite's df at 5% reached 9.0% at 2 vs 6 when the 2 units are the noisy side: its variance on 1
# df is often small, which makes both t and the df large. Computed by quadrature, not sampled:
# `bench/welch_small_units.py --grid` writes small_alpha.json, a table per level a plan may take (80, 90, 95, 98,
# 99, 99.5): every count of the larger side up to 12 (α′ dips there: 0.469% at 2 vs 6, 0.371% at 2 vs 8, 0.449% at
# 2 vs 12 at 95%), then 14, 16, 20, 25, 30, 40, 60, 100, where α′ only rises with the larger side (at 80% it
# reaches the nominal 20% at 2 vs 100: no correction). An α′ of 0: none keeps the level
# (at 99%, 2 vs 5 and more, at 98% 2 vs 7–60, at 99.5% 2 vs 4 and more: a side of 2 units whose variance on 1 df
# comes out small makes both tests reject whatever α′), or Hsu's df has the more power; Welch's part then takes
# Hsu's df.
SMALL_ALPHA_FILE = "small_alpha.json"
SMALL_UNITS = 5  # above, Welch's worst case at 5% is within a few tenths of a point of it


@functools.cache
def small_alpha_table(confidence: float) -> Mapping[tuple[int, int], float] | None:
    """α′ by (fewer units, more units) at this confidence, None where none was computed (Hsu's df then)."""
    rows = json.loads(files("fairmark.stats").joinpath(SMALL_ALPHA_FILE).read_text(encoding="utf-8")).get(
        f"{float(confidence):g}"
    )
    return {(int(a), int(b)): float(x) for a, b, x in rows} if rows else None


def small_alpha(few: int, many: int, confidence: float = 95.0) -> float:
    """α′ for these unit counts at `confidence` (a computed level: small_alpha_table): exact at every computed
    count; between two (above 12, where α′ rises with the larger side) the smaller, i.e. the lower count's; beyond
    the last the smaller of the last two."""
    table = small_alpha_table(confidence)
    if table is None:
        raise ValueError(f"no α′ computed at {confidence:g}% confidence")
    row = sorted((m, a) for (f, m), a in table.items() if f == few)
    above = [a for m, a in row if m >= many]
    below = [a for m, a in row if m <= many]
    if not above:
        return min(a for _, a in row[-2:])
    return min(above[0], below[-1]) if below else above[0]


def welch_units_df(
    df: float, na: int, nb: int, confidence: float, *, with_nested: bool
) -> tuple[float, float]:
    """The df of the verdict's Welch part on unit means, and the level (as a confidence) its t is taken at on
    Satterthwaite's df `df`: Satterthwaite's own at `confidence`, or with 2–5 units on a side the corrected level
    α′ (small_alpha) and the df whose quantile at `confidence` is that t, so the interval and the p come from one
    t. Without the nested part (one trial per unit), where the table's α′ is 0, or at a level no table was computed
    for (a plan takes only those that are), Hsu's min(na, nb) − 1, which keeps the level whatever the spreads
    (Mickey & Brown 1966), at a cost of power."""
    few, many = sorted((na, nb))
    if few > SMALL_UNITS:
        return df, confidence
    alpha = small_alpha(few, many, confidence) if with_nested and small_alpha_table(confidence) else 0.0
    # no table, no nested part, or no α′ keeps the level (or one with less power than Hsu's df)
    if alpha <= 0:
        return min(df, float(few - 1)), confidence
    t = t_isf(df, alpha / 2)
    return _df_of_quantile(t, (1 - confidence / 100) / 2, df), 100 * (1 - alpha)


def _df_of_quantile(t: float, tail: float, high: float) -> float:
    """The df (≤ high) at which P(T > t) = tail: bisection on log df (the tail shrinks as the df grow)."""
    lo, hi = math.log(1e-3), math.log(high)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if t_sf(math.exp(mid), t) < tail else (mid, hi)
    return math.exp(lo)


def _welch_units(
    xa: Floats, xb: Floats, log: bool, c: float, confidence: float, *, with_nested: bool
) -> tuple[Part, float] | None:
    """Welch's t on ≥ 2 unit means a side, on welch_units_df's df, and the factor of its standard error that a
    repeat detects with 80% power: at the level it tests on Satterthwaite's df (stats.power.mde_factor; the
    equivalent df can be below 1, where the factor is not defined); None without any spread."""
    va, vb = float(xa.var(ddof=1)) / xa.size, float(xb.var(ddof=1)) / xb.size
    if not va + vb > 0:
        return None
    df = (va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))
    df_t, level = welch_units_df(df, xa.size, xb.size, confidence, with_nested=with_nested)
    part = means_part(float(xa.mean()), float(xb.mean()), va, vb, df_t, log, c, confidence)
    return part, mde_factor(df if level != confidence else df_t, level)


def _widened(q: Part, inflation: float, log: bool, base: float, confidence: float) -> Part:
    """The part with its variance multiplied by `inflation` (its df kept)."""
    se = q.se * math.sqrt(inflation)
    if log:
        return _log_part(q.est, se, q.df, confidence)
    low, high = (
        ((base + q.est - q.t * se) / base, (base + q.est + q.t * se) / base) if base else (q.low, q.high)
    )
    return replace(q, se=se, p=two_sided_p(q.est / se, q.df), low=low, high=high)


def _nested_parts(ga: list[Floats], gb: list[Floats], log: bool, c: float, confidence: float) -> list[Part]:
    """The nested model's test of the difference of the (unweighted) unit means, σ_trial pooled over both sides;
    nothing without a within-unit spread (units of one trial each) or any spread at all. A single unit on a side
    (nothing else judges it: Welch needs two units) whose own trials vary more than the other side's adds that
    excess to its mean's variance, in a second test that must reject too: a checked run of CV 5% against
    baseline runs of CV 0.5% varies by its own σ_trial²/m (pooled: 15% false positives). Its own σ_trial
    alone is no better: from a few tied integers it can be 0 (6.6% in 4000 simulations)."""
    pooled = pooled_var([*ga, *gb])
    if not pooled[1]:
        return []
    parts = [_nested_test(ga, gb, pooled, log, c, confidence)]
    (vt_a, df_a), (vt_b, df_b) = pooled_var(ga), pooled_var(gb)
    if df_a and df_b and 1 in (len(ga), len(gb)):
        single_b = len(gb) == 1
        excess = (vt_b - vt_a) / gb[0].size if single_b else (vt_a - vt_b) / ga[0].size
        if excess > 0:
            extra = (excess, df_b if single_b else df_a)
            parts.append(_nested_test(ga, gb, pooled, log, c, confidence, extra=extra, on_b=single_b))
    return [q for q in parts if q is not None]


def _nested_test(
    ga: list[Floats],
    gb: list[Floats],
    trial: tuple[float, int],
    log: bool,
    c: float,
    confidence: float,
    *,
    extra: tuple[float, float] = (0.0, 1.0),
    on_b: bool = True,
) -> Part | None:
    """The nested model, σ_trial² (and its df) pooled: a unit mean varies by σ_unit² + σ_trial²/m; `extra`: a
    variance (and its df) added to side B's mean (`on_b`) or A's."""
    vt, df_t = trial
    na, nb = len(ga), len(gb)
    df_u = na + nb - 2
    if df_u < 1:
        return None
    ma, mb = np.array([g.mean() for g in ga]), np.array([g.mean() for g in gb])
    inv_a, inv_b = float(sum(1.0 / g.size for g in ga)), float(sum(1.0 / g.size for g in gb))
    ss = float(((ma - ma.mean()) ** 2).sum() + ((mb - mb.mean()) ** 2).sum())
    # E[ss] = df_u·σ_u² + σ_t²·tp; se² = σ_u²·k_u + σ_t²·(k_a + k_b)
    tp = (1 - 1 / na) * inv_a + (1 - 1 / nb) * inv_b
    k_u, k_a, k_b = 1 / na + 1 / nb, inv_a / na**2, inv_b / nb**2
    vu = (ss - vt * tp) / df_u
    # se² as a combination of independent mean squares, with Satterthwaite's df over them (with equal trials per
    # unit the trial term cancels: the pooled t on the unit means, df_u, exact). σ_unit² is not cut at 0 here:
    # the cut, with the trials' df, gave 5.6% [4.9, 6.4] false positives at 3 runs × 3 trials against one run
    # (bench/verdict_simulation.py, 4000 simulations); with the units' df far fewer than 5% (ss is small exactly
    # when the difference looks large).
    terms = [(k_u / df_u * ss, df_u), (vt * (k_a + k_b - tp * k_u / df_u), df_t), extra]
    se2 = sum(t for t, _ in terms)
    va, vb = vu / na + vt * k_a, vu / nb + vt * k_b
    va, vb = (va, vb + extra[0]) if on_b else (va + extra[0], vb)
    if se2 > 0 and va >= 0 and vb >= 0:
        # a negative coefficient can drive the df towards 0 (t → ∞): one df is the floor
        df = max(se2**2 / sum(t * t / d for t, d in terms if t), 1.0)
    else:  # the units vary less than their trials explain, so much that no variance is left: the trials' floor
        va, vb, df = vt * k_a, vt * k_b, float(df_u)
        va, vb = (va, vb + extra[0]) if on_b else (va + extra[0], vb)
        if not va + vb > 0:
            return None
    return means_part(float(ma.mean()), float(mb.mean()), va, vb, df, log, c, confidence)


def advice(
    lv: Levels, *, cost_unit_s: float | None = None, cost_trial_s: float | None = None
) -> Advice | None:
    """Where the next repetitions buy most precision: the standard error of the difference now (on the test's
    scale: each side's unit means vary by their own σ_unit² + σ_trial²/m, as Welch's t lets them), with twice the
    units, and with twice the trials per unit; the optimal trials per unit when costs are known. A side of one
    unit borrows the other side's σ_unit (the verdict assumes it too). None while a level's variance is
    unknown."""
    sides = [s for s in (lv.baseline, lv.other) if s is not None]
    vus = [s.sd_unit**2 for s in sides if math.isfinite(s.sd_unit)]
    if len(sides) < 2 or not vus or not all(math.isfinite(s.sd_trial) for s in sides):
        return None
    parts = [
        (s.sd_unit**2 if math.isfinite(s.sd_unit) else max(vus), s.sd_trial**2, s.per_unit, s.units)
        for s in sides
    ]

    def se(units_factor: float, trials_factor: float) -> float:
        return math.sqrt(sum((vu + vt / (m * trials_factor)) / (k * units_factor) for vu, vt, m, k in parts))

    optimal = None
    vu_all, vt_all = sum(p[0] for p in parts), sum(p[1] for p in parts)
    if cost_unit_s and cost_trial_s and vu_all > 0:
        optimal = max(1, math.ceil(math.sqrt(cost_unit_s * vt_all / (cost_trial_s * vu_all))))
    return Advice(lv.unit, se(1, 1), se(2, 1), se(1, 2), lv.scale, optimal)


def time_order_of(
    lv: Levels, units_a: Sequence[Unit], units_b: Sequence[Unit], starts: Mapping[str, float] | None
) -> TimeOrder | None:
    """The units' arrangement in time (stats.timeorder), when every unit's start is known."""
    if not starts or not known(units_a) or not known(units_b):
        return None
    names_a, names_b = list(dict.fromkeys(units_a)), list(dict.fromkeys(units_b))
    return time_order(names_a, lv.unit_means_baseline, names_b, lv.unit_means_other, starts)


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def differ_by_unit(units_a: Sequence[Unit] | None, units_b: Sequence[Unit] | None) -> bool:
    """Whether two sides were measured in different units at one level (their unit sets differ)."""
    return unit_level({"boot": (units_a or (), units_b or ())}) is not None
