"""Boots (or hosts) as a level: trials nested in boots, the boot as the unit of the verdict.

A kernel cannot change inside one boot, so two kernels are always measured in different boots, and boots differ
from each other (page placement, hash seeds, probing order, the kernel's own ASLR) by more than the noise between
trials of one boot. Treating the trials of two boots as independent samples of one distribution turns a boot
offset into a "kernel difference". The two-level model of Kalibera & Jones ("Rigorous benchmarking in reasonable
time", ISMM 2013) fixes that:

    y[b, j] = μ_side + β_b + ε_bj,     β_b ~ (0, σ_boot²) per boot,  ε_bj ~ (0, σ_trial²) per trial

* the verdict takes each boot's mean as ONE observation (unweighted, as Kalibera & Jones do): a pooled t on the
  boot means, df = boots_A + boots_B − 2, in ratio form by Fieller's theorem (stats.paired.pooled). The boot
  means' spread already holds both levels (σ_boot² + σ_trial²/m), so no variance component needs estimating for
  the test to hold its level;
* the variance at each level is reported: σ_trial from the pooled within-boot variance, σ_boot from the boot
  means' variance less the part the trials explain (method of moments, floored at 0);
* where the next repetitions buy most: the standard error with twice the boots vs twice the trials per boot;
  with costs given (seconds per boot and per trial) also Kalibera & Jones' optimal trials per boot
  √(c_boot·σ_trial² / (c_trial·σ_boot²)).
* one boot on a side whose other side has one boot too: the boot-to-boot variance is unknown, so no kernel
  difference is claimed; the within-boot comparison is shown only as a lower bound on the uncertainty.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from fairmark.stats.paired import RatioTest, pooled

if TYPE_CHECKING:
    from fairmark.stats.compare import Comparison
from fairmark.stats.tdist import exact_t

UNKNOWN_BOOT_VARIANCE = (
    "one {unit} per side: the {unit}-to-{unit} variance is unknown, so no difference between the variants can be "
    "claimed from these data (a {unit} offset alone can look like a change); measure ≥ 2 {unit}s per side"
)


@dataclass(frozen=True)
class Levels:
    """The two-level description of both sides' values."""

    unit: str  # "boot" | "host"
    units_baseline: int
    units_other: int
    trials: int
    unit_means_baseline: tuple[float, ...]
    unit_means_other: tuple[float, ...]
    trials_per_unit: float  # the mean count m
    sd_trial: float  # within-unit, pooled over units with ≥ 2 trials (nan: none has)
    sd_unit: float  # the unit component (method of moments, ≥ 0; nan: fewer than 2 units on every side)
    sd_unit_means: float  # pooled sd of the unit means (what the verdict uses; nan when unknown)

    def to_dict(self, *, advice: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "levels": [
                {"level": self.unit, "n": self.units_baseline + self.units_other, "n_baseline": self.units_baseline,
                 "n_other": self.units_other, "sd": _num(self.sd_unit), "sd_of_means": _num(self.sd_unit_means),
                 "means_baseline": list(self.unit_means_baseline), "means_other": list(self.unit_means_other)},
                {"level": "trial", "n": self.trials, "per_unit": self.trials_per_unit, "sd": _num(self.sd_trial)},
            ],
            "advice": advice,
        }  # fmt: skip


def group(values: Sequence[float], units: Sequence[Hashable]) -> list[np.ndarray]:
    """The values of each unit, in order of first appearance."""
    if len(values) != len(units):
        raise ValueError(f"{len(values)} values but {len(units)} unit labels")
    by: dict[Hashable, list[float]] = defaultdict(list)
    for v, u in zip(values, units, strict=True):
        by[u].append(float(v))
    return [np.asarray(v, dtype=float) for v in by.values()]


def _pooled_var(groups: Sequence[np.ndarray]) -> tuple[float, int]:
    """Pooled variance of groups with ≥ 2 members, and its df; (nan, 0) when none has."""
    ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups if g.size >= 2)
    df = sum(g.size - 1 for g in groups if g.size >= 2)
    return (ss / df if df else math.nan), df


def levels(
    a: Sequence[float], units_a: Sequence[Hashable], b: Sequence[float], units_b: Sequence[Hashable],
    unit: str = "boot",
) -> Levels:  # fmt: skip
    ga, gb = group(a, units_a), group(b, units_b)
    var_trial, _ = _pooled_var([*ga, *gb])
    ma, mb = np.array([g.mean() for g in ga]), np.array([g.mean() for g in gb])
    var_means, _ = _pooled_var([ma, mb])
    m = (len(a) + len(b)) / (len(ga) + len(gb))
    if math.isfinite(var_means):
        within = var_trial / m if math.isfinite(var_trial) else 0.0
        sd_unit = math.sqrt(max(var_means - within, 0.0))
    else:
        sd_unit = math.nan
    return Levels(unit, len(ga), len(gb), len(a) + len(b), tuple(map(float, ma)), tuple(map(float, mb)), m,
                  math.sqrt(var_trial) if math.isfinite(var_trial) else math.nan, sd_unit,
                  math.sqrt(var_means) if math.isfinite(var_means) else math.nan)  # fmt: skip


def unit_test(lv: Levels, *, confidence: float) -> RatioTest | None:
    """The verdict's test with the unit as the observation; None when the unit variance is unknown."""
    df = lv.units_baseline + lv.units_other - 2
    if df < 1 or not math.isfinite(lv.sd_unit_means):
        return None
    ma, mb = float(np.mean(lv.unit_means_baseline)), float(np.mean(lv.unit_means_other))
    t = exact_t(confidence, df)
    test = pooled(ma, mb, lv.sd_unit_means, lv.units_baseline, lv.units_other, t=t, confidence=confidence)
    return replace(test, design=f"{lv.unit}s as the unit")


def advice(
    lv: Levels, *, cost_unit_s: float | None = None, cost_trial_s: float | None = None
) -> dict[str, Any] | None:
    """Where the next repetitions buy most precision: the standard error of the difference now, with twice the
    units, and with twice the trials per unit (same design otherwise); the optimal trials per unit when costs
    are known. None while a level's variance is unknown."""
    if not (math.isfinite(lv.sd_unit) and math.isfinite(lv.sd_trial)):
        return None
    vu, vt, m = lv.sd_unit**2, lv.sd_trial**2, lv.trials_per_unit
    inv = 1 / lv.units_baseline + 1 / lv.units_other

    def se(units_factor: float, trials_factor: float) -> float:
        return math.sqrt((vu + vt / (m * trials_factor)) * inv / units_factor)

    now, more_units, more_trials = se(1, 1), se(2, 1), se(1, 2)
    out: dict[str, Any] = {
        "se_now": now, f"se_twice_the_{lv.unit}s": more_units, "se_twice_the_trials_per_unit": more_trials,
        "next": f"more {lv.unit}s" if more_units < more_trials else f"more trials per {lv.unit}",
        "share_of_variance_from_" + lv.unit + "s": vu / (vu + vt / m) if vu + vt / m > 0 else math.nan,
    }  # fmt: skip
    if cost_unit_s and cost_trial_s and vu > 0:
        out["optimal_trials_per_unit"] = max(1, math.ceil(math.sqrt(cost_unit_s * vt / (cost_trial_s * vu))))
    return out


def advice_sentence(lv: Levels, adv: dict[str, Any] | None, mean_baseline: float) -> str:
    if adv is None:
        return f"where more repetitions help most: unknown until each side has ≥ 2 {lv.unit}s"
    pct = 100.0 / abs(mean_baseline) if mean_baseline else math.nan
    share = adv["share_of_variance_from_" + lv.unit + "s"]
    return (
        f"{100 * share:.0f}% of a {lv.unit} mean's variance is {lv.unit}-to-{lv.unit}; the next repetitions buy "
        f"most as {adv['next']} (standard error {adv['se_now'] * pct:.2g}% now, "
        f"{adv[f'se_twice_the_{lv.unit}s'] * pct:.2g}% with twice the {lv.unit}s, "
        f"{adv['se_twice_the_trials_per_unit'] * pct:.2g}% with twice the trials per {lv.unit})"
    )


def compare_levels(
    a: Sequence[float], units_a: Sequence[Hashable], b: Sequence[float], units_b: Sequence[Hashable], *,
    level: str = "boot", confidence: float = 95.0, **kwargs: Any,
) -> Comparison:  # fmt: skip
    """The verdict of two sides measured in different units (boots, hosts): the unit is the observation. The
    returned Comparison keeps the trial-level summaries and ministat lines; its verdict fields (significant,
    p_value, design, ratio and its CI, mde, change, sentence) are the unit-level test's, and `levels` holds the
    per-level n and sd with the advice. `kwargs` go to stats.compare (better, names, unit of the metric)."""
    from fairmark.stats.compare import compare, verdict_sentence

    trial_level = compare(a, b, confidence=confidence, **kwargs)
    lv = levels(a, units_a, b, units_b, level)
    test = unit_test(lv, confidence=confidence)
    adv = advice(lv)
    ma = float(np.mean(lv.unit_means_baseline))
    names = (trial_level.name_baseline, trial_level.name_other)
    if test is None:
        why = UNKNOWN_BOOT_VARIANCE.format(unit=level)
        return replace(
            trial_level, significant=False, change="none", p_value=math.nan, design=f"one {level} per side",
            n_pairs=None, ratio_ci_low=math.nan, ratio_ci_high=math.nan, mde_percent=math.nan,
            sentence=f"{names[1]} vs {names[0]}: no difference claimed: {why}. Within one {level} only (a lower "
                     f"bound on the uncertainty, not a verdict): {trial_level.sentence}",
            warnings=(*trial_level.warnings, why),
            levels=lv.to_dict(advice=None) | {"within_lower_bound": {
                "ratio_ci_low": _num(trial_level.ratio_ci_low), "ratio_ci_high": _num(trial_level.ratio_ci_high),
                "p_value": _num(trial_level.p_value), "significant": trial_level.significant}},
        )  # fmt: skip
    better = trial_level.better
    change = (
        "none"
        if not test.significant
        else ("better" if (test.difference < 0) == (better == "lower") else "worse")
    )
    sentence = verdict_sentence(names, test, ma, test.significant, better, trial_level.unit, confidence)
    counts = f"{lv.units_baseline} vs {lv.units_other} {level}s as the unit"
    return replace(
        trial_level, significant=test.significant, change=change, p_value=test.p_value, design=test.design,
        n_pairs=None, df=int(test.df), ratio=test.ratio, ratio_ci_low=test.ratio_ci_low,
        ratio_ci_high=test.ratio_ci_high, mde_percent=100.0 * test.mde / abs(ma) if ma else math.nan,
        sentence=f"{sentence} ({counts}); {advice_sentence(lv, adv, ma)}",
        levels=lv.to_dict(advice=adv),
    )  # fmt: skip


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def differ_by_unit(units_a: Sequence[Hashable] | None, units_b: Sequence[Hashable] | None) -> bool:
    """Whether two sides were measured in different units (no boot in common): then the unit is the level the
    verdict must take as its observation. Unknown units (None) never route."""
    if not units_a or not units_b or None in units_a or None in units_b:
        return False
    return not (set(units_a) & set(units_b))
