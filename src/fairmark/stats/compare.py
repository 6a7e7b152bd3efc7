"""A/B comparison of two samples: the verdict, ministat's Student t with pooled s, Welch's t with the CI of
the ratio B/A, and a rank test (exact Mann-Whitney U, or Wilcoxon's signed rank for pairs) as a cross-check.

Two designs decide the verdict (`significant`, `change`, `sentence`), see stats.paired:
* **paired by round** when the trials' rounds are given (an interleaved run): it assumes only that what differs
  between rounds is shared by the cells of a round, and that the pairs' differences are roughly normal;
* **pooled** otherwise (`fairmark compare`): ministat's rule |d| > e with its t table (exact quantiles above df
  100 unless ministat_compat), assuming independent trials with a common variance.
The sentence gives the ratio's Fieller interval in percent (asymmetric where it is), and when nothing is proven
the change this run would have detected with 80% power. ministat's own lines (`percent = 100·d/Avg_r`,
`percent_half_width = 100·e/Avg_r`, the formula of ministat 20150715) stay in the ministat block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import special

from fairmark.errors import InputError, UsageError
from fairmark.stats.describe import Summary, as_array, describe
from fairmark.stats.digits import format_pair
from fairmark.stats.paired import RatioTest, paired_by_round, pooled
from fairmark.stats.ranks import can_reach, exact_mann_whitney, signed_rank
from fairmark.stats.tdist import differs_from_ministat, exact_t, t_quantile, verdict_t

Better = Literal["lower", "higher"]
TIME_UNITS = frozenset({"s", "sec", "seconds", "ms", "us", "µs", "ns", "min", "wall_s"})
FEW_TRIALS = 6  # below this a verdict rests on very little (ministat's floor is 3)


@dataclass(frozen=True)
class Comparison:
    name_baseline: str
    name_other: str
    unit: str
    better: Better
    confidence: float
    ministat_compat: bool
    n_baseline: int
    n_other: int
    mean_baseline: float
    mean_other: float
    difference: float  # other − baseline
    half_width: float  # e = t·s_p·√(1/n_b + 1/n_o)
    percent: float  # 100·d/mean_baseline
    percent_half_width: float  # 100·e/mean_baseline
    pooled_stddev: float
    df: int
    t_quantile: float
    significant: bool  # the verdict of `design`
    p_value: float  # the p of `design`'s test, two-sided
    ministat_significant: bool  # ministat's rule: |d| > e
    student_p: float  # Student (pooled), two-sided
    design: str  # "paired by round" | "pooled"
    n_pairs: int | None
    ratio: float  # mean_other / mean_baseline
    ratio_ci_low: float  # Fieller's interval of the ratio in `design` (nan: unbounded)
    ratio_ci_high: float
    mde_percent: float  # the change (in % of the baseline) this design detects with 80% power
    welch: dict[str, float]
    mann_whitney: dict[str, Any]
    change: Literal["better", "worse", "none"]
    sentence: str
    warnings: tuple[str, ...]
    ministat_note: str | None  # where fairmark's numbers differ from ministat's at this level
    baseline: Summary = field(repr=False)
    other: Summary = field(repr=False)
    levels: dict[str, Any] | None = None  # boots/hosts as a level (stats.levels): per level n and sd, advice

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["baseline"], out["other"] = self.baseline.to_dict(), self.other.to_dict()
        out["warnings"] = list(self.warnings)
        # JSON has no NaN (PostgreSQL refuses it): an unknown number is null
        for key in ("ratio", "ratio_ci_low", "ratio_ci_high", "mde_percent", "p_value"):
            if not math.isfinite(out[key]):
                out[key] = None
        for key in ("welch", "mann_whitney"):
            out[key] = {
                k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out[key].items()
            }
        return out


def compare(
    baseline: Sequence[float],
    other: Sequence[float],
    *,
    confidence: float = 95.0,
    better: Better = "lower",
    name_baseline: str = "A",
    name_other: str = "B",
    unit: str = "",
    ministat_compat: bool = False,
    aa_percent_half_width: float | None = None,
    rounds: tuple[Sequence[int], Sequence[int]] | None = None,
    first_stage: int | None = None,
    calibration: dict[str, Any] | None = None,
) -> Comparison:
    """Compare `other` with `baseline`. `rounds`: the round of each value (same order), for the blocked design;
    `first_stage`: the rounds from which the run chose its length (stats.stopping). `aa_percent_half_width`: the
    ±% an A/A run of this workload showed on this machine; a significant change smaller than that gets a warning.
    `calibration`: what `fairmark calibrate` measured for this workload on this host (stats.calibration)."""
    a, b = _checked(baseline, other, better, (name_baseline, name_other))
    sa, sb = describe(a, confidence), describe(b, confidence)
    ministat = _ministat(a, b, sa, sb, confidence, ministat_compat)
    tv = verdict_t(confidence, ministat["df"], ministat_compat=ministat_compat)
    test = _design_test(a, b, sa, sb, ministat["pooled_stddev"], tv, confidence, rounds, first_stage)
    cross = _cross_check(a, b, test, rounds, confidence)
    significant, lower = test.significant, ministat["difference"] < 0
    change = "none" if not significant else ("better" if lower == (better == "lower") else "worse")
    names = (name_baseline, name_other)
    sentence = verdict_sentence(names, test, sa.mean, significant, better, unit, confidence, calibration)
    return Comparison(
        name_baseline=name_baseline,
        name_other=name_other,
        unit=unit,
        better=better,
        confidence=float(confidence),
        ministat_compat=ministat_compat,
        n_baseline=int(a.size),
        n_other=int(b.size),
        mean_baseline=sa.mean,
        mean_other=sb.mean,
        **ministat,
        significant=significant,
        p_value=test.p_value,
        design=test.design,
        n_pairs=test.n_pairs,
        ratio=test.ratio,
        ratio_ci_low=test.ratio_ci_low,
        ratio_ci_high=test.ratio_ci_high,
        mde_percent=_pct(test.mde, abs(sa.mean)),
        welch=welch_ratio(sa, sb, confidence),
        mann_whitney=cross,
        change=change,
        sentence=sentence,
        warnings=tuple(
            _warnings(sa, sb, names, test, cross, confidence)
            + _calibration_warning(significant, ministat["percent"], aa_percent_half_width)
        ),
        baseline=sa,
        other=sb,
    )


def _checked(
    baseline: Sequence[float], other: Sequence[float], better: str, names: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    if better not in ("lower", "higher"):
        raise UsageError(f"better must be 'lower' or 'higher', got {better!r}")
    a, b = as_array(baseline), as_array(other)
    for name, arr in zip(names, (a, b), strict=True):
        if arr.size < 2:
            raise InputError(f"{name}: {arr.size} value(s); a comparison needs at least 2 (ministat wants 3)")
    return a, b


def _ministat(
    a: np.ndarray, b: np.ndarray, sa: Summary, sb: Summary, confidence: float, ministat_compat: bool
) -> dict[str, Any]:
    """ministat's block: Student's t with the pooled s, the difference d and its half-width e (|d| > e is
    ministat's verdict), in units and in percent of the baseline's mean."""
    df = a.size + b.size - 2
    t = t_quantile(confidence, df, ministat_compat=ministat_compat)
    pooled_sd = math.sqrt(((a.size - 1) * sa.stddev**2 + (b.size - 1) * sb.stddev**2) / df)
    d = sb.mean - sa.mean
    e = t * pooled_sd * math.sqrt(1.0 / a.size + 1.0 / b.size)
    return {
        "difference": d,
        "half_width": e,
        "percent": _pct(d, sa.mean),
        "percent_half_width": _pct(e, sa.mean),
        "pooled_stddev": pooled_sd,
        "df": df,
        "t_quantile": t,
        "ministat_significant": bool(abs(d) > e),
        "student_p": _student_p(d, pooled_sd, a.size, b.size, df),
        "ministat_note": differs_from_ministat(float(confidence), ministat_compat, df),
    }


def _design_test(a, b, sa, sb, pooled_sd, t, confidence, rounds, first_stage) -> RatioTest:
    """The blocked analysis when rounds are known and at least 3 pairs complete, ministat's pooled one else."""
    if rounds is not None:
        ra, rb = rounds
        if len(ra) != a.size or len(rb) != b.size:
            raise InputError("rounds must give one round per value")
        test = paired_by_round(
            dict(zip(ra, a.tolist(), strict=True)), dict(zip(rb, b.tolist(), strict=True)),
            confidence=confidence, first_stage=first_stage,
        )  # fmt: skip
        if test is not None:
            return test
    return pooled(sa.mean, sb.mean, pooled_sd, sa.n, sb.n, t=t, confidence=confidence)


def _cross_check(a, b, test: RatioTest, rounds, confidence: float) -> dict[str, Any]:
    """The rank test matching the design: Wilcoxon signed rank on the pairs, exact Mann-Whitney U else."""
    if np.ptp(np.concatenate([a, b])) == 0:  # all values equal: nothing to rank
        return {"test": "Mann-Whitney U", "u": a.size * b.size / 2.0, "p_value": 1.0, "min_p": 1.0,
                "significant": False}  # fmt: skip
    alpha = 1.0 - confidence / 100.0
    if test.design == "paired by round" and rounds is not None:
        by_a = dict(zip(rounds[0], a.tolist(), strict=True))
        d = np.array([v - by_a[r] for r, v in zip(rounds[1], b.tolist(), strict=True) if r in by_a])
        out = {"test": "Wilcoxon signed rank", "u": None, **signed_rank(d)}
    else:
        out = {"test": "Mann-Whitney U", **exact_mann_whitney(a, b)}
    return out | {"significant": bool(out["p_value"] < alpha)}


def _pct(x: float, base: float) -> float:
    return 100.0 * x / base if base != 0 else math.nan


def _student_p(d: float, pooled: float, na: int, nb: int, df: int) -> float:
    se = pooled * math.sqrt(1.0 / na + 1.0 / nb)
    if se == 0:
        return 1.0 if d == 0 else 0.0
    return two_sided_p(d / se, df)


def two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with df degrees of freedom."""
    return float(2.0 * special.stdtr(df, -abs(t)))


def welch_ratio(sa: Summary, sb: Summary, confidence: float) -> dict[str, float]:
    """Welch's t test and the CI of mean_b/mean_a by Fieller's theorem with the Welch-Satterthwaite df.

    Fieller solves (m_b − R·m_a)² = t²·(v_b + R²·v_a) for R, with v = s²/n; the interval is bounded only when
    the baseline mean is itself clearly away from zero (m_a² > t²·v_a), else its ends are nan (unbounded).
    """
    va, vb = sa.stddev**2 / sa.n, sb.stddev**2 / sb.n
    d = sb.mean - sa.mean
    ratio = sb.mean / sa.mean if sa.mean != 0 else math.nan
    if va + vb == 0:  # no spread at all: the ratio is what it is, but no test statistic exists
        p = 1.0 if d == 0 else 0.0
        return {"t": math.nan, "df": math.nan, "p_value": p, "ratio": ratio, "ratio_ci_low": ratio,
                "ratio_ci_high": ratio}  # fmt: skip
    tw = d / math.sqrt(va + vb)
    # Both samples divided by one constant: neither the df nor the ratio's CI changes, and the squares below
    # stay in range for any finite input (3e77 squared twice overflowed a float)
    c = max(abs(sa.mean), abs(sb.mean), math.sqrt(va), math.sqrt(vb))
    ma, mb, va, vb = sa.mean / c, sb.mean / c, va / c / c, vb / c / c
    dfw = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    p = two_sided_p(tw, dfw)
    low, high = _fieller(ma, mb, va, vb, exact_t(confidence, dfw))
    return {"t": tw, "df": dfw, "p_value": p, "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high}


def _fieller(ma: float, mb: float, va: float, vb: float, t: float) -> tuple[float, float]:
    qa = ma * ma - t * t * va
    if qa <= 0:
        return (math.nan, math.nan)
    disc = (ma * mb) ** 2 - qa * (mb * mb - t * t * vb)
    root = math.sqrt(max(disc, 0.0))
    return ((ma * mb - root) / qa, (ma * mb + root) / qa)


def _direction_word(ratio: float, better: Better, unit: str) -> str:
    if unit in TIME_UNITS and better == "lower":
        return "faster" if ratio < 1 else "slower"
    good = (ratio < 1) == (better == "lower")
    return ("higher" if ratio > 1 else "lower") + (" (better)" if good else " (worse)")


EXACT_PCT = 1e-9  # below this, a percentage is floating-point rounding, not a measurement


def _percent_interval(test: RatioTest) -> tuple[str, str, str] | None:
    """(observed change, CI low, CI high) in percent, signed and rounded together; None when unbounded."""
    low, high = test.ratio_ci_low, test.ratio_ci_high
    if not all(math.isfinite(v) for v in (test.ratio, low, high)):
        return None
    pct = [100.0 * (v - 1.0) for v in (test.ratio, low, high)]
    hw = (pct[2] - pct[1]) / 2 or None
    return tuple(_signed(v, hw) + "%" for v in pct)  # type: ignore[return-value]


def verdict_sentence(
    names: tuple[str, str],
    test: RatioTest,
    mean_baseline: float,
    significant: bool,
    better: Better,
    unit: str,
    confidence: float,
    calibration: dict[str, Any] | None = None,
) -> str:
    """The line a human reads: the change with the ratio's interval (asymmetric where it is), or, without
    proof, what this run could have detected with 80% power. Never 'identical'."""
    base, other = names
    spread = _pct(test.se, abs(mean_baseline))
    flat = test.se == 0 and test.difference == 0  # also at a baseline of 0, where no percentage exists
    if flat or (
        math.isfinite(spread) and spread < EXACT_PCT and abs(_pct(test.difference, mean_baseline)) < EXACT_PCT
    ):
        # No variation at all (a compression ratio, a count): a CI of ±1e-14% is not a bound worth printing.
        return f"{other} vs {base}: the same value in every trial (no variation to test)"
    ci = _percent_interval(test) if mean_baseline > 0 else None
    how = f"{confidence:g}% CI" + (", paired by round" if test.design == "paired by round" else "")
    if ci:
        observed = f"{ci[0]} ({how}: {ci[1]} to {ci[2]})"
    else:
        suffix = f" {unit}" if unit else ""
        observed = f"{_signed(test.difference, test.t_quantile * test.se)}{suffix} ± " + (
            f"{format_pair(test.difference, test.t_quantile * test.se)[1]}{suffix} ({how})"
        )
    if significant:
        word = _direction_word(test.ratio if ci else 1 + math.copysign(1, test.difference), better, unit)
        text = f"{other} is {word} than {base}: {observed}"
    else:
        mde = _pct(test.mde, abs(mean_baseline))
        # an MDE is a size, not an estimate with an interval: two significant digits ("±0 ± 0 IO/s" before)
        could = (
            f"±{format_pair(mde, mde)[0]}%"
            if math.isfinite(mde)
            else f"±{test.mde:.2g}{' ' + unit if unit else ''}"
        )
        text = (
            f"{other} vs {base}: no difference proven at {confidence:g}% confidence, observed {observed}; "
            f"this run would detect a change of {could} with {POWER_PCT}% power"
        )
    return text + _calibration_clause(calibration)


POWER_PCT = 80


def _calibration_clause(calibration: dict[str, Any] | None) -> str:
    if not calibration:
        return ""
    mde, fp = calibration.get("mde_percent"), calibration.get("false_positive_rate")
    parts = []
    if mde is not None and math.isfinite(mde) and mde > 0:
        parts.append(f"this machine shows changes beyond ±{format_pair(mde, mde)[0]}% for this workload")
    if fp is not None:
        low, high = calibration.get("false_positive_ci", (math.nan, math.nan))
        parts.append(
            f"{100 * fp:.3g}% false positives in {calibration.get('runs')} A/A runs "
            f"(95% CI {100 * low:.2g}–{100 * high:.2g}%)"
        )
    return f"; calibration: {', '.join(parts)}" if parts else ""


def _signed(value: float, half_width: float | None) -> str:
    text = format_pair(value, half_width)[0]
    return text if text.startswith("-") or text == "0" else "+" + text


def _calibration_warning(significant: bool, percent: float, aa_pct: float | None) -> list[str]:
    if aa_pct is None or not significant or not math.isfinite(percent) or abs(percent) >= aa_pct:
        return []
    return [
        f"the change ({percent:+.2g}%) is within the ±{aa_pct:.2g}% an A/A run of this workload shows on this "
        "machine: treat it as unproven"
    ]


def _warnings(sa, sb, names, test: RatioTest, cross, confidence: float) -> list[str]:
    out = []
    for name, s in zip(names, (sa, sb), strict=True):
        if s.n < FEW_TRIALS:
            out.append(f"{name} has only {s.n} values; fewer than {FEW_TRIALS} make a fragile verdict")
    if sa.stddev == 0 and sb.stddev == 0:
        out.append("both samples have zero spread; suspect a coarse clock, a cached result or a constant")
    alpha = 1.0 - confidence / 100.0
    # A rank test that cannot reach α with these n (3 + 3 values: p ≥ 0.1) has nothing to disagree with.
    if test.significant != cross["significant"] and can_reach(cross, alpha):
        mine = "Student's t" + (" (paired)" if test.design == "paired by round" else "")
        which = mine if test.significant else cross["test"]
        out.append(
            f"{mine} and {cross['test']} disagree (only {which} finds a difference, "
            f"rank test p = {cross['p_value']:.3g}): skew, outliers or two modes; look at the plot"
        )
    if math.isnan(test.ratio_ci_low) and not math.isnan(test.ratio):
        out.append(f"{names[0]}'s mean is not clearly away from zero: the CI of the ratio is unbounded")
    return out
