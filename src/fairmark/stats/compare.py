"""A/B comparison of two samples: ministat's Student t with pooled s, Welch's t with the CI of the ratio
B/A, and Mann-Whitney U as a distribution-free cross-check.

The verdict (`significant`, `change`, `sentence`) follows ministat's rule |d| > e with ministat's t table, so
`fairmark compare` and `ministat` agree on the same data. Percentages are relative to the baseline mean:
`percent = 100·d/Avg_r` and `percent_half_width = 100·e/Avg_r` — the formula of ministat 20150715 (newer
FreeBSD versions use a ratio-aware one); the Welch ratio CI (Fieller's theorem) is the one to read when the
baseline itself is noisy.
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
from fairmark.stats.digits import format_pair, format_percent, format_value
from fairmark.stats.tdist import differs_from_ministat, exact_t, t_quantile

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
    significant: bool  # ministat's rule: |d| > e
    p_value: float  # Student (pooled), two-sided
    welch: dict[str, float]
    mann_whitney: dict[str, Any]
    change: Literal["better", "worse", "none"]
    sentence: str
    warnings: tuple[str, ...]
    ministat_note: str | None  # where fairmark's numbers differ from ministat's at this level
    baseline: Summary = field(repr=False)
    other: Summary = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["baseline"], out["other"] = self.baseline.to_dict(), self.other.to_dict()
        out["warnings"] = list(self.warnings)
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
) -> Comparison:
    """Compare `other` with `baseline`. `aa_percent_half_width`: the ±% an A/A run of this workload showed on
    this machine (calibration); a significant change smaller than that gets a warning."""
    if better not in ("lower", "higher"):
        raise UsageError(f"better must be 'lower' or 'higher', got {better!r}")
    a, b = as_array(baseline), as_array(other)
    for name, arr in ((name_baseline, a), (name_other, b)):
        if arr.size < 2:
            raise InputError(f"{name}: {arr.size} value(s); a comparison needs at least 2 (ministat wants 3)")
    sa, sb = describe(a, confidence), describe(b, confidence)
    df = a.size + b.size - 2
    t = t_quantile(confidence, df, ministat_compat=ministat_compat)
    pooled = math.sqrt(((a.size - 1) * sa.stddev**2 + (b.size - 1) * sb.stddev**2) / df)
    d = sb.mean - sa.mean
    e = t * pooled * math.sqrt(1.0 / a.size + 1.0 / b.size)
    significant = bool(abs(d) > e)
    percent, percent_hw = _pct(d, sa.mean), _pct(e, sa.mean)
    welch = welch_ratio(sa, sb, confidence)
    mwu = mann_whitney(a, b, confidence)
    change = "none" if not significant else ("better" if (d < 0) == (better == "lower") else "worse")
    names = (name_baseline, name_other)
    sentence = verdict_sentence(names, d, e, percent, percent_hw, significant, better, unit, confidence)
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
        difference=d,
        half_width=e,
        percent=percent,
        percent_half_width=percent_hw,
        pooled_stddev=pooled,
        df=df,
        t_quantile=t,
        significant=significant,
        p_value=_student_p(d, pooled, a.size, b.size, df),
        welch=welch,
        mann_whitney=mwu,
        change=change,
        sentence=sentence,
        warnings=tuple(
            _warnings(sa, sb, names, significant, mwu, welch)
            + _calibration_warning(significant, percent, aa_percent_half_width)
        ),
        ministat_note=differs_from_ministat(float(confidence), ministat_compat),
        baseline=sa,
        other=sb,
    )


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


def mann_whitney(a: np.ndarray, b: np.ndarray, confidence: float) -> dict[str, Any]:
    """Two-sided Mann-Whitney U of `b` against `a` (U counts pairs where b > a, ties half)."""
    if np.ptp(np.concatenate([a, b])) == 0:  # all values equal: nothing to rank
        return {"u": a.size * b.size / 2.0, "p_value": 1.0, "significant": False}
    from scipy import stats  # heavy import, only when a comparison is made

    res = stats.mannwhitneyu(b, a, alternative="two-sided")
    p = float(res.pvalue)
    return {"u": float(res.statistic), "p_value": p, "significant": bool(p < 1.0 - confidence / 100.0)}


def _direction_word(d: float, better: Better, unit: str) -> str:
    if unit in TIME_UNITS and better == "lower":
        return "faster" if d < 0 else "slower"
    good = (d < 0) == (better == "lower")
    return ("higher" if d > 0 else "lower") + (" (better)" if good else " (worse)")


EXACT_PCT = 1e-9  # below this, a percentage is floating-point rounding, not a measurement


def verdict_sentence(
    names: tuple[str, str],
    d: float,
    e: float,
    percent: float,
    percent_hw: float,
    significant: bool,
    better: Better,
    unit: str,
    confidence: float,
) -> str:
    """The line a human reads. Never 'identical': without proof, say how large a change could have hidden."""
    base, other = names
    relative = math.isfinite(percent) and math.isfinite(percent_hw)
    if relative and abs(percent_hw) < EXACT_PCT and abs(percent) < EXACT_PCT:
        # No variation at all (a compression ratio, a count): a CI of ±1e-14% is not a bound worth printing.
        return f"{other} vs {base}: the same value in every trial (no variation to test)"
    if significant:
        size = format_percent(abs(percent), percent_hw) if relative else format_value(abs(d), e, unit)
        word = _direction_word(d, better, unit)
        return f"{other} is {size} {word} than {base} ({confidence:g}% CI)"
    if relative:
        bound, observed = format_pair(percent_hw, percent_hw)[0] + "%", _signed(percent, percent_hw) + "%"
    else:
        suffix = f" {unit}" if unit else ""
        bound, observed = format_pair(e, e)[0] + suffix, _signed(d, e) + suffix
    return (
        f"{other} vs {base}: no difference proven at {confidence:g}% confidence; "
        f"a change beyond ±{bound} would have shown (observed {observed})"
    )


def _signed(value: float, half_width: float) -> str:
    text = format_pair(value, half_width)[0]
    return text if text.startswith("-") or text == "0" else "+" + text


def _calibration_warning(significant: bool, percent: float, aa_pct: float | None) -> list[str]:
    if aa_pct is None or not significant or not math.isfinite(percent) or abs(percent) >= aa_pct:
        return []
    return [
        f"the change ({percent:+.2g}%) is within the ±{aa_pct:.2g}% an A/A run of this workload shows on this "
        "machine: treat it as unproven"
    ]


def _warnings(sa, sb, names, significant, mwu, welch) -> list[str]:
    out = []
    for name, s in zip(names, (sa, sb), strict=True):
        if s.n < FEW_TRIALS:
            out.append(f"{name} has only {s.n} values; fewer than {FEW_TRIALS} make a fragile verdict")
    if sa.stddev == 0 and sb.stddev == 0:
        out.append("both samples have zero spread; suspect a coarse clock, a cached result or a constant")
    if significant != mwu["significant"]:
        which = "Student's t" if significant else "Mann-Whitney U"
        out.append(
            f"Student's t and Mann-Whitney U disagree (only {which} finds a difference, "
            f"U p = {mwu['p_value']:.3g}): skew, outliers or two modes; look at the plot"
        )
    if math.isnan(welch["ratio_ci_low"]) and not math.isnan(welch["ratio"]):
        out.append(f"{names[0]}'s mean is not clearly away from zero: the CI of the ratio is unbounded")
    return out
