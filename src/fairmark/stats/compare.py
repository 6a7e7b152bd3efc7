"""A/B comparison of two samples: fairmark's verdict, ministat's Student t with pooled s, and a rank test
(exact Mann-Whitney U, or Wilcoxon's signed rank for pairs) as a cross-check.

The verdict (`significant`, `change`, `sentence`, the ratio and its interval) comes from one design
(stats.paired): **paired by round** when the trials' rounds are given (an interleaved run), **Welch** otherwise
(`fairmark compare`: unequal variances and n allowed) — on the logarithms when every value is positive; two
independent samples with outliers flagged, or whose Welch t and rank test disagree, are decided by Yuen's t on
trimmed means (stats.robust: the rule and why). The
sentence gives the ratio's interval in percent (asymmetric where it is), and when nothing is proven the change
this design detects with 80% power (stats.power). ministat's own numbers (pooled Student t with its t table:
`difference`, `half_width`, `percent`, `percent_half_width`, `pooled_stddev`, `ministat_significant`) are kept
for ministat's lines and never decide fairmark's sentence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Literal, TypedDict

import numpy as np

from fairmark.errors import InputError, UsageError
from fairmark.jsonvalue import JSONObject
from fairmark.stats import sequential as seq
from fairmark.stats.arrays import Floats, Values
from fairmark.stats.describe import Summary, as_array, describe, sample_sd
from fairmark.stats.digits import estimate_text, format_pair
from fairmark.stats.levels import LevelsReport
from fairmark.stats.paired import RatioTest, RoundKey, paired_by_round, two_sided_p, welch
from fairmark.stats.ranks import RankCheck, can_reach, exact_mann_whitney, signed_rank
from fairmark.stats.tdist import differs_from_ministat, exact_t, t_quantile

Better = Literal["lower", "higher"]
TIME_UNITS = frozenset({"s", "sec", "seconds", "ms", "us", "µs", "ns", "min", "wall_s"})
FEW_TRIALS = 6  # below this a verdict rests on very little (ministat's floor is 3)
POWER_PCT = 80
Rounds = tuple[Sequence[RoundKey], Sequence[RoundKey]]  # each side's round of each value (same order)

__all__ = ["Better", "Comparison", "compare", "two_sided_p", "verdict_sentence", "welch_ratio"]


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
    difference: float  # other − baseline (ministat's d)
    half_width: float  # ministat's e = t·s_p·√(1/n_b + 1/n_o)
    percent: float  # 100·d/mean_baseline (ministat's line)
    percent_half_width: float  # 100·e/mean_baseline (ministat's line; not the verdict's interval)
    pooled_stddev: float
    df: float  # the verdict's df
    t_quantile: float  # the verdict's t quantile (nan: no t test, see `constant`)
    significant: bool  # the verdict of `design`
    p_value: float  # the p of `design`'s test, two-sided
    ministat_significant: bool  # ministat's rule: |d| > e
    student_p: float  # Student (pooled), two-sided
    design: str  # "paired by round" | "Welch" | "runs as the unit" | "boots as the unit" | …
    n_pairs: int | None
    ratio: float  # other/baseline: of the geometric means on the log scale, of the means on the raw one
    ratio_ci_low: float  # the verdict's interval of the ratio (nan: unbounded or no interval)
    ratio_ci_high: float
    mde_percent: float  # the change (in % of the baseline) this design detects with 80% power
    welch: dict[str, float]
    mann_whitney: RankCheck
    change: Literal["better", "worse", "none"]
    sentence: str
    warnings: tuple[str, ...]
    ministat_note: str | None  # where fairmark's numbers differ from ministat's at this level
    baseline: Summary = field(repr=False)
    other: Summary = field(repr=False)
    levels: LevelsReport | None = None  # runs/boots/hosts as a level (stats.levels): per level n and sd
    scale: str = "raw"  # "log": tested on the logarithms (ratio of geometric means); "raw": on the values
    constant: bool = False  # no spread: decided by a rank test, no interval
    claim: bool = True  # False: the data cannot support a claim (one unit per side), whatever they show
    # stop = "decision" (stats.sequential): what the sequential test decided, at which look, its TOST interval
    sequential: JSONObject | None = None

    @property
    def change_percent(self) -> float:
        return 100.0 * (self.ratio - 1.0) if math.isfinite(self.ratio) else math.nan

    @property
    def interval(self) -> str:
        """The change and the interval of the design that decided, as the tables show it (interval_text of the
        comparison as JSON has it: an unknown bound is None)."""
        fields: dict[str, object] = {
            k: getattr(self, k) for k in ("constant", "claim", "design", "significant")
        }
        for k in ("ratio", "ratio_ci_low", "ratio_ci_high"):
            x = getattr(self, k)
            fields[k] = x if math.isfinite(x) else None
        return interval_text(fields)

    def to_dict(self) -> JSONObject:
        out: JSONObject = asdict(replace(self, levels=None))
        out["baseline"], out["other"] = self.baseline.to_dict(), self.other.to_dict()
        out["warnings"] = list(self.warnings)
        out["levels"] = self.levels.to_dict() if self.levels is not None else None
        out["change_percent"] = self.change_percent
        out["interval"] = interval_text(out)
        # JSON has no NaN (PostgreSQL refuses it): an unknown number is null
        for key in (
            "ratio",
            "ratio_ci_low",
            "ratio_ci_high",
            "mde_percent",
            "p_value",
            "percent",
            "percent_half_width",
            "t_quantile",
            "df",
            "change_percent",
        ):
            value = out[key]
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None
        for key in ("welch", "mann_whitney"):
            test = out[key]
            assert isinstance(test, dict)  # asdict's copy of a dict field
            out[key] = {
                k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in test.items()
            }
        return out


def compare(
    baseline: Values,
    other: Values,
    *,
    confidence: float = 95.0,
    better: Better = "lower",
    name_baseline: str = "A",
    name_other: str = "B",
    unit: str = "",
    ministat_compat: bool = False,
    aa_percent_half_width: float | None = None,
    rounds: Rounds | None = None,
    first_stage: int | None = None,
    length_planned: bool = False,
    calibration: Mapping[str, object] | None = None,
    sequential: seq.Design | None = None,
    robust: bool = True,
) -> Comparison:
    """Compare `other` with `baseline`. `rounds`: the round of each value (same order; an int, or (run, round)
    from several runs), for the paired design; `first_stage`: the rounds the run chose its length from
    (stats.stopping), `length_planned` whether it ran to that length. `aa_percent_half_width`: the ±% an A/A run
    showed here (a smaller significant change is warned of). `calibration`: `fairmark calibrate`'s figures
    (stats.calibration). `sequential`: the run stopped when decided. `robust`: stats.robust's rule may decide."""
    a, b = _checked(baseline, other, better, names := (name_baseline, name_other))
    sa, sb = describe(a, confidence), describe(b, confidence)
    ministat = _ministat(a, b, sa, sb, confidence, ministat_compat)
    stages = (first_stage, length_planned)
    decided, test, cross, note = _decide((a, b), names, confidence, rounds, stages, sequential, robust)
    sentence = verdict_sentence(names, test, sa.mean, test.significant, better, unit, confidence, calibration)
    sentence = (
        sequential_sentence(names, decided, sequential, better, unit, confidence) if decided else sentence
    )
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
        **verdict_fields(test, sa.mean),
        welch=welch_ratio(sa, sb, confidence),
        mann_whitney=cross,
        change=change_of(test, better),
        sentence=sentence,
        warnings=(
            *note,
            *_warnings(sa, sb, names, test, cross, confidence, early=_decided_early(decided)),
            *_calibration_warning(test, aa_percent_half_width),
        ),
        baseline=sa,
        other=sb,
        sequential=seq.to_dict(decided[1], sequential, test.scale == "log")
        if decided and sequential
        else None,
    )


def _sequential_test(
    a: Floats, b: Floats, rounds: Rounds | None, design: seq.Design | None
) -> tuple[RatioTest, seq.Look] | None:
    """The sequential design's test of pairs by round (None: no such design, or fewer than 3 pairs)."""
    if design is None or rounds is None:
        return None
    ra, rb = rounds
    if len(ra) != a.size or len(rb) != b.size:
        raise InputError("rounds must give one round per value")
    return seq.paired_ratio_test(
        dict(zip(ra, a.tolist(), strict=True)), dict(zip(rb, b.tolist(), strict=True)), design
    )


def _decided_early(decided: tuple[RatioTest, seq.Look] | None) -> bool:
    return decided is not None and decided[1].decision in ("different", "equivalent")


def sequential_sentence(
    names: tuple[str, str],
    decided: tuple[RatioTest, seq.Look],
    design: seq.Design | None,
    better: Better,
    unit: str,
    confidence: float,
    units: str = "rounds",
) -> str:
    """'decided after 7 rounds: B is slower than A: +3.1% (95% CI, sequential: +1.2% to +5.0%)', or
    equivalent / undecided with the same repeated interval (valid however early the run stopped)."""
    test, look = decided
    base, other = names
    assert design is not None  # a sequential test was made with it
    head = seq.outcome(look, log=test.scale == "log", design=design, units=units)
    ci = percent_texts(test.ratio, test.ratio_ci_low, test.ratio_ci_high, test.significant)
    observed = (
        f"{ci[0]} ({confidence:g}% CI, sequential: {ci[1]} to {ci[2]})" if ci else "no bounded interval"
    )
    if test.significant:
        return f"{head}: {other} is {_direction_word(test.ratio, better, unit)} than {base}: {observed}"
    return f"{head}: {other} vs {base}: {observed}"


class MinistatFields(TypedDict):
    """The fields of a Comparison that ministat's block sets."""

    difference: float
    half_width: float
    percent: float
    percent_half_width: float
    pooled_stddev: float
    ministat_significant: bool
    student_p: float
    ministat_note: str | None


class VerdictFields(TypedDict):
    """The fields of a Comparison that the deciding test sets."""

    df: float
    t_quantile: float
    significant: bool
    p_value: float
    design: str
    n_pairs: int | None
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    mde_percent: float
    scale: str
    constant: bool


def verdict_fields(test: RatioTest, mean_baseline: float) -> VerdictFields:
    return {
        "df": test.df,
        "t_quantile": test.t_quantile,
        "significant": test.significant,
        "p_value": test.p_value,
        "design": test.design,
        "n_pairs": test.n_pairs,
        "ratio": test.ratio,
        "ratio_ci_low": test.ratio_ci_low,
        "ratio_ci_high": test.ratio_ci_high,
        "mde_percent": mde_percent(test, mean_baseline),
        "scale": test.scale,
        "constant": test.constant,
    }


def change_of(test: RatioTest, better: Better) -> Literal["better", "worse", "none"]:
    if not test.significant:
        return "none"
    return "better" if (test.difference < 0) == (better == "lower") else "worse"


def mde_percent(test: RatioTest, mean_baseline: float) -> float:
    if test.scale == "log":
        return test.mde_percent
    return 100.0 * test.mde / abs(mean_baseline) if mean_baseline else math.nan


def _checked(baseline: Values, other: Values, better: str, names: tuple[str, str]) -> tuple[Floats, Floats]:
    if better not in ("lower", "higher"):
        raise UsageError(f"better must be 'lower' or 'higher', got {better!r}")
    a, b = as_array(baseline), as_array(other)
    for name, arr in zip(names, (a, b), strict=True):
        if arr.size < 2:
            raise InputError(f"{name}: {arr.size} value(s); a comparison needs at least 2 (ministat wants 3)")
    return a, b


def _ministat(
    a: Floats, b: Floats, sa: Summary, sb: Summary, confidence: float, ministat_compat: bool
) -> MinistatFields:
    """ministat's block: Student's t with the pooled s, the difference d and its half-width e (|d| > e is
    ministat's verdict), in units and in percent of the baseline's mean."""
    df = a.size + b.size - 2
    t = t_quantile(confidence, df, ministat_compat=ministat_compat)
    pooled_sd = _pooled_sd(a, b, df)
    d = sb.mean - sa.mean
    e = t * (pooled_sd * math.sqrt(1.0 / a.size + 1.0 / b.size))
    return {
        "difference": d,
        "half_width": e,
        "percent": _pct(d, sa.mean),
        "percent_half_width": _pct(e, sa.mean),
        "pooled_stddev": pooled_sd,
        "ministat_significant": bool(abs(d) > e),
        "student_p": _student_p(d, pooled_sd, a.size, b.size, df),
        "ministat_note": differs_from_ministat(float(confidence), ministat_compat, df),
    }


def _pooled_sd(a: Floats, b: Floats, df: int) -> float:
    """√(((n_a − 1)·s_a² + (n_b − 1)·s_b²)/df), scaled so that tiny (1e-300) and huge values stay in range."""
    scale = max(float(np.max(np.abs(a - a.mean()))), float(np.max(np.abs(b - b.mean()))))
    if scale == 0:
        return 0.0
    sa, sb = sample_sd(a) / scale, sample_sd(b) / scale
    return scale * math.sqrt(((a.size - 1) * sa * sa + (b.size - 1) * sb * sb) / df)


def _design_test(
    a: Floats, b: Floats, confidence: float, rounds: Rounds | None, stages: tuple[int | None, bool]
) -> RatioTest:
    """Paired by round when rounds are known and at least 3 pairs complete, Welch else."""
    if rounds is not None:
        ra, rb = rounds
        if len(ra) != a.size or len(rb) != b.size:
            raise InputError("rounds must give one round per value")
        test = paired_by_round(
            dict(zip(ra, a.tolist(), strict=True)),
            dict(zip(rb, b.tolist(), strict=True)),
            confidence=confidence,
            first_stage=stages[0],
            length_planned=stages[1],
        )
        if test is not None:
            return test
    return welch(a, b, confidence=confidence)


def _decide(
    samples: tuple[Floats, Floats],
    names: tuple[str, str],
    confidence: float,
    rounds: Rounds | None,
    stages: tuple[int | None, bool],
    sequential: seq.Design | None,
    robust: bool,
) -> tuple[tuple[RatioTest, seq.Look] | None, RatioTest, RankCheck, list[str]]:
    """The test that decides (sequential, the design's, or Yuen's where stats.robust says so), the rank test
    that cross-checks it, and the line saying why Yuen's decided."""
    a, b = samples
    decided = _sequential_test(a, b, rounds, sequential)
    test = decided[0] if decided else _design_test(a, b, confidence, rounds, stages)
    cross = _cross_check(a, b, test, rounds, confidence)
    if not robust or decided:
        return decided, test, cross, []
    robust_test, note = _robust(a, b, names, test, cross, confidence)
    return decided, robust_test, cross, note


def _robust(
    a: Floats, b: Floats, names: tuple[str, str], test: RatioTest, cross: RankCheck, confidence: float
) -> tuple[RatioTest, list[str]]:
    """Yuen's trimmed t in place of Welch's when stats.robust's rule says the data call for it, with a line
    saying why and what Welch's t alone said."""
    from fairmark.stats import robust

    why = robust.robust_reason((a, b), names, test, cross, 1.0 - confidence / 100.0)
    decided = robust.yuen(a, b, confidence=confidence) if why else None
    if decided is None:
        return test, []
    welch_text = interval_text({**verdict_fields(test, 1.0), "claim": True})
    return decided, [
        f"decided by {robust.DESIGN} (the middle 60% of each sample, on the logarithms) because {why}; "
        f"Welch's t alone: {welch_text}, p = {test.p_value:.2g}"
    ]


def _cross_check(
    a: Floats, b: Floats, test: RatioTest, rounds: Rounds | None, confidence: float
) -> RankCheck:
    """The rank test matching the design: Wilcoxon signed rank on the pairs, exact Mann-Whitney U else."""
    alpha = 1.0 - confidence / 100.0
    if np.ptp(np.concatenate([a, b])) == 0:  # all values equal: nothing to rank
        return {
            "test": "Mann-Whitney U",
            "u": a.size * b.size / 2.0,
            "p_value": 1.0,
            "min_p": 1.0,
            "significant": False,
        }
    if test.design == "paired by round" and rounds is not None:
        by_a = dict(zip(rounds[0], a.tolist(), strict=True))
        pairs = [(by_a[r], v) for r, v in zip(rounds[1], b.tolist(), strict=True) if r in by_a]
        pa, pb = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        d = np.log(pb) - np.log(pa) if test.scale == "log" else pb - pa
        sr = signed_rank(d)
        return RankCheck(
            test="Wilcoxon signed rank",
            u=None,
            p_value=sr["p_value"],
            min_p=sr["min_p"],
            significant=bool(sr["p_value"] < alpha),
        )
    mw = exact_mann_whitney(a, b)
    return RankCheck(
        test="Mann-Whitney U",
        u=mw["u"],
        p_value=mw["p_value"],
        min_p=mw["min_p"],
        exact=mw["exact"],
        significant=bool(mw["p_value"] < alpha),
    )


def _pct(x: float, base: float) -> float:
    return 100.0 * x / base if base != 0 else math.nan


def _student_p(d: float, pooled: float, na: int, nb: int, df: int) -> float:
    se = pooled * math.sqrt(1.0 / na + 1.0 / nb)
    if se == 0:
        return 1.0 if d == 0 else 0.0
    return two_sided_p(d / se, df)


def welch_ratio(sa: Summary, sb: Summary, confidence: float) -> dict[str, float]:
    """Welch's t test on the values and the CI of mean_b/mean_a by Fieller's theorem with the
    Welch-Satterthwaite df (kept for the JSON and the ministat view; the verdict is stats.paired's)."""
    ratio = sb.mean / sa.mean if sa.mean != 0 else math.nan
    # Both samples divided by one constant: neither the df nor the ratio's CI changes, and the squares below
    # stay in range for any finite input (3e77 squared twice overflowed a float, 1e300 squared once)
    c = max(abs(sa.mean), abs(sb.mean), sa.stddev, sb.stddev)
    if not c > 0 or not (sa.stddev > 0 or sb.stddev > 0):  # no spread at all: no test statistic exists
        nan = math.nan
        return {
            "t": nan,
            "df": nan,
            "p_value": nan,
            "ratio": ratio,
            "ratio_ci_low": nan,
            "ratio_ci_high": nan,
        }
    ma, mb = sa.mean / c, sb.mean / c
    va, vb = (sa.stddev / c) ** 2 / sa.n, (sb.stddev / c) ** 2 / sb.n
    tw = (mb - ma) / math.sqrt(va + vb)
    dfw = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    p = two_sided_p(tw, dfw)
    from fairmark.stats.paired import fieller

    low, high = fieller(ma, mb, va, vb, 0.0, exact_t(confidence, dfw))
    return {"t": tw, "df": dfw, "p_value": p, "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high}


def _direction_word(ratio: float, better: Better, unit: str) -> str:
    if unit in TIME_UNITS and better == "lower":
        return "faster" if ratio < 1 else "slower"
    good = (ratio < 1) == (better == "lower")
    return ("higher" if ratio > 1 else "lower") + (" (better)" if good else " (worse)")


EXACT_PCT = 1e-9  # below this, a percentage is floating-point rounding, not a measurement


def percent_texts(ratio: float, low: float, high: float, significant: bool) -> tuple[str, str, str] | None:
    """(observed change, CI low, CI high) in percent, signed and rounded together; None when unbounded. A
    significant interval's bounds keep the digits that show they exclude 0 ("-1.2% to -0.03%", never
    "to +0.0%")."""
    if not all(math.isfinite(v) for v in (ratio, low, high)):
        return None
    pct = [100.0 * (v - 1.0) for v in (ratio, low, high)]
    hw = (pct[2] - pct[1]) / 2 or None
    texts = [_signed(v, hw) for v in pct]
    if significant:
        near = min(pct[1:], key=abs)
        while hw and _pct_value(texts[1 + pct[1:].index(near)]) * near <= 0 and hw > abs(near) * 1e-6:
            hw /= 10  # one more digit until the near bound shows its sign
            texts = [_signed(v, hw) for v in pct]
    estimate = estimate_text(pct[0], hw)  # two significant digits at least, however wide the interval
    estimate = estimate if estimate.startswith("-") or float(estimate) == 0 else "+" + estimate
    return (estimate + "%", texts[1] + "%", texts[2] + "%")


def _pct_value(text: str) -> float:
    return float(text)


def _number(d: Mapping[str, object], key: str) -> float | None:
    """A number of a comparison or calibration as JSON holds it (None: absent, null or not a number)."""
    value = d.get(key)
    return value if isinstance(value, int | float) else None


def interval_text(d: Mapping[str, object]) -> str:
    """The verdict's change and interval as the tables show it: '+1.8% (+0.4% to +3.3%)'; 'no interval' when the
    design gave none (no spread; one unit per side), 'unbounded' when the baseline is not clearly away from 0.
    From a comparison's dict (as stored), so every table shows the interval of the design that decided."""
    if d.get("constant"):
        return "no interval (no spread)"
    low, high, ratio = _number(d, "ratio_ci_low"), _number(d, "ratio_ci_high"), _number(d, "ratio")
    if not d.get("claim", True):
        return "no claim (" + (str(d.get("design") or "") or "one unit per side") + ")"
    if ratio is None or low is None or high is None:
        return "unbounded interval"
    texts = percent_texts(ratio, low, high, bool(d.get("significant")))
    return f"{texts[0]} ({texts[1]} to {texts[2]})" if texts else "unbounded interval"


def verdict_sentence(
    names: tuple[str, str],
    test: RatioTest,
    mean_baseline: float,
    significant: bool,
    better: Better,
    unit: str,
    confidence: float,
    calibration: Mapping[str, object] | None = None,
) -> str:
    """The line a human reads: the change with the ratio's interval (asymmetric where it is), or, without
    proof, what this design detects with 80% power. Never 'identical'."""
    base, other = names
    if test.constant:
        return _constant_sentence(names, test, mean_baseline, significant, better, unit, confidence)
    ci = percent_texts(test.ratio, test.ratio_ci_low, test.ratio_ci_high, significant)
    how = f"{confidence:g}% CI" + (f", {test.design}" if test.design not in ("Welch", "pooled") else "")
    if ci:
        observed = f"{ci[0]} ({how}: {ci[1]} to {ci[2]})"
    else:
        suffix = f" {unit}" if unit else ""
        hw = test.t_quantile * test.se
        observed = (
            f"{_signed(test.difference, hw)}{suffix} ± {format_pair(test.difference, hw)[1]}{suffix} ({how})"
        )
    if significant:
        word = _direction_word(test.ratio if ci else 1 + math.copysign(1, test.difference), better, unit)
        text = f"{other} is {word} than {base}: {observed}"
    else:
        text = (
            f"{other} vs {base}: no difference proven at {confidence:g}% confidence, observed {observed}; "
            f"this run would detect a change of {_mde_text(test, mean_baseline, unit)} with {POWER_PCT}% power"
        )
    return text + _calibration_clause(calibration)


def _mde_text(test: RatioTest, mean_baseline: float, unit: str) -> str:
    pct = mde_percent(test, mean_baseline)
    if math.isfinite(pct) and test.scale == "raw" and pct > 100 and math.isfinite(test.mde):
        # values around 0 (a difference, a count): a percentage of a mean near 0 says nothing ("±800%")
        suffix = f" {unit}" if unit else ""
        near = format_pair(mean_baseline, test.mde)[0]
        return f"±{format_pair(test.mde, test.mde)[0]}{suffix} (the baseline's mean, {near}{suffix}, is too near 0 for a percentage)"
    if math.isfinite(pct):
        return f"±{format_pair(pct, pct)[0]}%"
    if math.isfinite(test.mde):  # a baseline mean of 0: in the values' unit (once, not "±2.1 ± 2.1")
        return f"±{format_pair(test.mde, test.mde)[0]}" + (f" {unit}" if unit else "")
    return "no size (too few values)"


def _constant_sentence(
    names: tuple[str, str],
    test: RatioTest,
    mean_baseline: float,
    significant: bool,
    better: Better,
    unit: str,
    confidence: float,
) -> str:
    """No spread: say so, with the rank test that decided, and no interval."""
    base, other = names
    if test.scale == "log":
        size = f"{_signed(100.0 * (test.ratio - 1.0), None)}%"
    else:
        size = f"{_signed(test.difference, None)}" + (f" {unit}" if unit else "")
    if test.design == "paired by round":
        what = f"{other} − {base} was the same {size} in all {test.n_pairs} rounds"
        rank = f"sign test p = {test.p_value:.2g}"
    else:
        what = f"{base} and {other} were each constant ({other}: {size} vs {base})"
        rank = f"Mann-Whitney U p = {test.p_value:.2g}"
    if test.difference == 0:
        return f"{other} vs {base}: the same value in every trial (no variation to test)"
    head = f"{what}: no spread, so no t test and no interval; {rank}"
    if significant:
        word = _direction_word(1 + math.copysign(1, test.difference), better, unit)
        return f"{other} is {word} than {base}: {head}"
    return f"{other} vs {base}: no difference proven at {confidence:g}% confidence: {head}"


def _calibration_clause(calibration: Mapping[str, object] | None) -> str:
    if not calibration:
        return ""
    mde, fp = _number(calibration, "mde_percent"), _number(calibration, "false_positive_rate")
    parts = []
    if mde is not None and math.isfinite(mde) and mde > 0:
        parts.append(f"this machine shows changes beyond ±{format_pair(mde, mde)[0]}% for this workload")
    if fp is not None:
        ci = calibration.get("false_positive_ci")
        low, high = (ci[0], ci[1]) if isinstance(ci, list | tuple) and len(ci) == 2 else (math.nan, math.nan)
        parts.append(
            f"{100 * fp:.3g}% false positives in {calibration.get('runs')} A/A runs "
            f"(95% CI {100 * low:.2g}–{100 * high:.2g}%)"
        )
    return f"; calibration: {', '.join(parts)}" if parts else ""


def _signed(value: float, half_width: float | None) -> str:
    text = format_pair(value, half_width)[0]
    return text if text.startswith("-") or float(text) == 0 else "+" + text


def _calibration_warning(test: RatioTest, aa_pct: float | None) -> list[str]:
    change = 100.0 * (test.ratio - 1.0) if math.isfinite(test.ratio) else math.nan
    if aa_pct is None or not test.significant or not math.isfinite(change) or abs(change) >= aa_pct:
        return []
    return [
        f"the change ({change:+.2g}%) is within the ±{aa_pct:.2g}% an A/A run of this workload shows on this "
        "machine: treat it as unproven"
    ]


ZERO_SPREAD = "both samples have zero spread"  # (stats.judge drops it for a metric constant by design)


def _warnings(
    sa: Summary,
    sb: Summary,
    names: tuple[str, str],
    test: RatioTest,
    cross: RankCheck,
    confidence: float,
    early: bool = False,
) -> list[str]:
    """`early`: the decision stop decided on these few trials, by design (its sentence says after how many)."""
    out = []
    for name, s in zip(names, (sa, sb), strict=True):
        if s.n < FEW_TRIALS and not early:
            out.append(f"{name} has only {s.n} values; fewer than {FEW_TRIALS} make a fragile verdict")
    if sa.stddev == 0 and sb.stddev == 0:
        out.append(f"{ZERO_SPREAD}; suspect a coarse clock, a cached result or a constant")
    alpha = 1.0 - confidence / 100.0
    # A rank test that cannot reach α with these n (3 + 3 values: p ≥ 0.1) has nothing to disagree with.
    if not test.constant and test.significant != cross["significant"] and can_reach(cross, alpha):
        mine = {
            "paired by round": "Student's t (paired)",
            "Welch": "Welch's t",
            "Yuen's t, 20% trimmed": "Yuen's t",
        }.get(test.design, "the t test")
        which = mine if test.significant else cross["test"]
        out.append(
            f"{mine} and {cross['test']} disagree (only {which} finds a difference, "
            f"rank test p = {cross['p_value']:.3g}): skew, outliers or two modes; look at the plot"
        )
    if not test.constant and not test.interval_bounded and not math.isnan(test.ratio):
        out.append(f"{names[0]}'s mean is not clearly away from zero: the CI of the ratio is unbounded")
    return out
