"""The wording of a comparison (issue 33 item 5): stats/compare.py tests two samples and returns numbers
(`Tested`); this says them — the sentence a human reads (the change with the ratio's interval, asymmetric where it
is, or without proof what this design detects with 80% power; never "identical"), the warnings beside it, and
where ministat's numbers differ — in the `Comparison` every command shows and `--json` gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from fairmark.stats.arrays import Values
from fairmark.stats.compare import Better, Rounds, Tested, change_of, mde_percent, tested, verdict_fields
from fairmark.stats.describe import Summary
from fairmark.stats.digits import (
    detectable_pair,
    estimate_text,
    format_pair,
    format_spread,
    last_digit_exponent,
    round_to,
    scale_unit,
    shared_scale,
    significant_exponent,
    unit_suffix,
)
from fairmark.stats.paired import RatioTest
from fairmark.stats.ranks import RankCheck, can_reach
from fairmark.stats.robust import DESIGN as ROBUST
from fairmark.stats.stopping import Capped
from fairmark.stats.tdist import MINISTAT_LEVELS, MINISTAT_MAX_DF

if TYPE_CHECKING:  # annotations only: `compare` of files loads no stats.levels (verdict/judge.py's _level)
    from fairmark.jsonvalue import JSONObject
    from fairmark.stats import sequential as seq
    from fairmark.stats.levels import Advice, LevelsReport

TIME_UNITS = frozenset({"s", "sec", "seconds", "ms", "us", "µs", "ns", "min", "wall_s"})
FEW_TRIALS = 6  # below this a verdict rests on very little (ministat's floor is 3)
POWER_PCT = 80

__all__ = ["Better", "Comparison", "compare", "interval_text", "percent_texts", "verdict_sentence"]


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
        out["levels"] = levels_dict(self.levels) if self.levels is not None else None
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
    length_planned: bool | Capped = False,
    calibration: Mapping[str, object] | None = None,
    sequential: seq.Design | None = None,
    robust: bool = True,
) -> Comparison:
    """Compare `other` with `baseline`: stats.compare.tested's numbers (its arguments), in words.
    `aa_percent_half_width`: the ±% an A/A run showed here (a smaller significant change is warned of).
    `calibration`: `fairmark calibrate`'s figures (stats.calibration), said after the sentence."""
    names = (name_baseline, name_other)
    t = tested(
        baseline,
        other,
        confidence=confidence,
        better=better,
        names=names,
        ministat_compat=ministat_compat,
        rounds=rounds,
        first_stage=first_stage,
        length_planned=length_planned,
        sequential=sequential,
        robust=robust,
    )
    sa, sb, test, look = t.baseline, t.other, t.test, t.look
    return Comparison(
        name_baseline=name_baseline,
        name_other=name_other,
        unit=unit,
        better=better,
        confidence=float(confidence),
        ministat_compat=ministat_compat,
        n_baseline=sa.n,
        n_other=sb.n,
        mean_baseline=sa.mean,
        mean_other=sb.mean,
        **t.ministat,
        **verdict_fields(test, sa.mean),
        welch=t.welch,
        mann_whitney=t.cross,
        change=change_of(test, better),
        sentence=_sentence(t, names, better, unit, confidence, calibration, sequential),
        warnings=_all_warnings(t, names, confidence, aa_percent_half_width),
        ministat_note=ministat_note(float(confidence), ministat_compat, sa.n + sb.n - 2),
        baseline=sa,
        other=sb,
        sequential=_look_dict(look, sequential, test.scale == "log") if look and sequential else None,
    )


def _all_warnings(
    t: Tested, names: tuple[str, str], confidence: float, aa_percent_half_width: float | None
) -> tuple[str, ...]:
    """Why Yuen's decided, the warnings of the samples and of the tests, and the A/A run's."""
    return (
        *robust_note(t, names),
        *_warnings(t.baseline, t.other, names, t.test, t.cross, confidence, early=t.decided_early),
        *_calibration_warning(t.test, aa_percent_half_width),
    )


def _sentence(
    t: Tested,
    names: tuple[str, str],
    better: Better,
    unit: str,
    confidence: float,
    calibration: Mapping[str, object] | None,
    sequential: seq.Design | None,
) -> str:
    """The sequential test's sentence when the decision stop decided, the design's otherwise."""
    if t.look is not None:
        return sequential_sentence(names, (t.test, t.look), sequential, better, unit, confidence)
    return verdict_sentence(
        names, t.test, t.baseline.mean, t.test.significant, better, unit, confidence, calibration
    )


def robust_note(t: Tested, names: tuple[str, str]) -> list[str]:
    """The line saying why Yuen's t decided and what Welch's t alone said (none when Welch's stands)."""
    if t.welch_test is None or t.robust_reason is None:
        return []
    flagged = [name for name, f in zip(names, t.robust_reason.flagged, strict=True) if f]
    why = (
        "outliers flagged in " + " and ".join(flagged)
        if flagged
        else "Welch's t and the Mann-Whitney U test disagree"
    )
    welch_text = interval_text({**verdict_fields(t.welch_test, 1.0), "claim": True})
    return [
        f"decided by {ROBUST} (the middle 60% of each sample, on the logarithms) because {why}; "
        f"Welch's t alone: {welch_text}, p = {t.welch_test.p_value:.2g}"
    ]


def ministat_note(confidence: float, ministat_compat: bool, df: float = 0) -> str | None:
    """A sentence saying where fairmark's numbers differ from ministat's at this level (stats.tdist), or None."""
    if df > MINISTAT_MAX_DF and not ministat_compat and confidence in MINISTAT_LEVELS:
        return (
            f"df = {df:g} > {MINISTAT_MAX_DF}: ministat's lines use its ∞ row as ministat does; fairmark's verdict "
            "uses the exact t quantile (slightly wider). --ministat-compat uses the ∞ row for both."
        )
    if confidence == 99.5 and not ministat_compat:
        return (
            "ministat's 99.5% column really holds the 99.8% quantile; fairmark uses the true 99.5% quantile "
            "(narrower interval). --ministat-compat reproduces ministat."
        )
    if confidence not in MINISTAT_LEVELS:
        return f"ministat has no {confidence:g}% level (it offers 80 90 95 98 99 99.5); exact t used"
    return None


def _look_dict(look: seq.Look, design: seq.Design, log: bool) -> JSONObject:
    """The decision stop's last look as stored with the comparison (stats.sequential.to_dict): loaded for a run
    that stopped so, not for `show` of any other (LAZY_FOR_START)."""
    from fairmark.stats.sequential import to_dict

    return to_dict(look, design, log)


def outcome(test: seq.Look, *, log: bool, design: seq.Design, units: str = "rounds") -> str:
    """What the sequential test said (stats.sequential), as a report's head: 'decided after 7 rounds',
    'equivalent within ±2% after 12 rounds (two one-sided tests at 5%, sequential 90% interval −1.0% to +1.3%)',
    'undecided after 30 rounds (neither a difference nor equivalence within ±2% proven)'."""
    m = f"±{design.equivalence_pct:g}%"
    if test.decision == "different":
        return f"decided after {test.n} {units}"
    if test.decision == "equivalent":
        level = 100.0 - 200.0 * design.alpha
        return (
            f"equivalent within {m} after {test.n} {units} (two one-sided tests at {100 * design.alpha:g}%, "
            f"sequential {level:g}% interval {_look_interval(test.eq_low, test.eq_high, log)})"
        )
    state = "undecided" if test.decision == "undecided" else "not yet decided"
    return f"{state} after {test.n} {units} (neither a difference nor equivalence within {m} proven)"


def _look_interval(low: float, high: float, log: bool) -> str:
    """'-1.0% to +1.3%': both bounds rounded once at the interval's digits (change_text), as every interval of
    a change is ("+0.06% to +0.09%" printed "+0.1% to +0.1%" with one decimal, "-12.34%" kept four digits)."""
    lo, hi = (100.0 * (math.expm1(x) if log else x) for x in (low, high))
    hw = (hi - lo) / 2 or None
    return f"{change_text(lo, hw)} to {change_text(hi, hw)}"


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
    head = outcome(look, log=test.scale == "log", design=design, units=units)
    ci = percent_texts(test.ratio, test.ratio_ci_low, test.ratio_ci_high, test.significant)
    observed = (
        f"{ci[0]} ({confidence:g}% CI, sequential: {ci[1]} to {ci[2]})" if ci else "no bounded interval"
    )
    if test.significant:
        return f"{head}: {other} is {_direction_word(test.ratio, better, unit)} than {base}: {observed}"
    return f"{head}: {other} vs {base}: {observed}"


def _direction_word(ratio: float, better: Better, unit: str) -> str:
    if unit in TIME_UNITS and better == "lower":
        return "faster" if ratio < 1 else "slower"
    good = (ratio < 1) == (better == "lower")
    return ("higher" if ratio > 1 else "lower") + (" (better)" if good else " (worse)")


EXACT_PCT = 1e-9  # below this, a percentage is floating-point rounding, not a measurement


def percent_texts(ratio: float, low: float, high: float, significant: bool) -> tuple[str, str, str] | None:
    """(observed change, CI low, CI high) in percent, signed, each rounded once by change_text: to the interval's
    last digit or to two significant digits of its own, whichever is finer; None when unbounded. So a
    significant interval's bounds show that they exclude 0 ("-1.2% to -0.030%", never "to +0.0%") without giving
    the estimate and the other bound digits of a narrower interval (it once printed "-1.200% (-2.360% to -0.0040%)":
    every text rounded again to the width that made the near bound show its sign). `significant` is kept for the
    callers: two digits of its own show every bound's sign."""
    del significant
    if not all(math.isfinite(v) for v in (ratio, low, high)):
        return None
    pct = [100.0 * (v - 1.0) for v in (ratio, low, high)]
    hw = (pct[2] - pct[1]) / 2 or None
    return (change_text(pct[0], hw), change_text(pct[1], hw), change_text(pct[2], hw))


def change_text(pct: float, hw: float | None) -> str:
    """A change in percent, signed, in one rounding step: to the interval's last digit (half-width `hw`) or to
    two significant digits of its own, whichever is finer — and above -100% to one significant digit at least of
    what is left (the ratio), so a value never rounds across 0 or onto -100%: a boots run's lower bound of ratio
    0.0052 printed "0% to +30000%", one of 0.03 "-100%", and an estimate of -99.7% under a wide interval "-100%".
    A value under EXACT_PCT is floating-point rounding of 0: it keeps the interval's digits, as 0 does. An
    unbounded interval (`hw` inf) has no digit to give: two of its own ("-8.8%", not "-8.767%")."""
    if not math.isfinite(pct):  # no change can be stated (a mean of 0): format_pair's "n/a", unsigned
        return "n/a"
    text = format_pair(pct, hw)[0]  # the interval's digits (a float-noise interval: four significant digits)
    unbounded = hw is not None and math.isinf(hw)
    shown = math.inf if unbounded else last_digit_exponent(hw) if hw is not None else None
    if abs(pct) >= EXACT_PCT and math.isfinite(pct) and shown is not None:
        own = significant_exponent(pct, 2)
        if -100 < pct < 0:
            own = min(own, significant_exponent(100 + pct, 1))
        if own < shown:
            text = round_to(pct, own)
    return (text if text.startswith("-") or float(text) == 0 else "+" + text) + "%"


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
        hw = test.t_quantile * test.se
        div, suffix = in_prefix(unit, test.difference, hw)
        d, h = test.difference / div, hw / div
        observed = f"{_signed(d, h)}{suffix} ± {format_pair(d, h)[1]}{suffix} ({how})"
    if significant:
        word = _direction_word(test.ratio if ci else 1 + math.copysign(1, test.difference), better, unit)
        text = f"{other} is {word} than {base}: {observed}"
    else:
        text = (
            f"{other} vs {base}: no difference proven at {confidence:g}% confidence, observed {observed}; "
            f"this run would detect a change of {_mde_text(test, mean_baseline, unit)} with {POWER_PCT}% power"
        )
    return text + _calibration_clause(calibration)


HUGE_RISE_PCT = 99_900.0  # ×1000: beyond it a detectable change is said as a factor, not in digits


def detectable_size(x: float) -> str:
    """A detectable change's size with its %, two significant digits wherever it is printed: the verdict, its
    calibration clause, `calibrate` and the busy headline said one MDE as "-50% or +80%", "-46% or +84%" and
    "+79% to +84%" on one screen."""
    return format_spread(x, "%")


def fall_text(fall: float, rise: float, fmt: Callable[[float], str] = detectable_size) -> str:
    """A detectable fall with its %: a fall only comes near -100%, never to it — the digits that say how near."""
    if fall < 99.5:
        return fmt(fall)
    left = 1e4 / (100 + rise)  # 100 - fall without the cancellation
    return f"{100 - left:.{max(1, math.ceil(-math.log10(left)))}f}%"


def detectable_text(rise_pct: float, log: bool, fmt: Callable[[float], str] = detectable_size) -> str:
    """ "±5.0%" or "-91% or +970%": the change a design detects, each number written by `fmt` (with its %); past a
    factor of 1000 either way "more than ×1000 either way" (a boots run on one df needed ×10¹⁷, and the fall's
    digits took log10(0): "internal error: math domain error" at the end of a run at load 20)."""
    fall, rise = detectable_pair(rise_pct, log)
    if fall == rise:
        return f"±{fmt(rise)}"
    if rise >= HUGE_RISE_PCT:
        return f"more than ×{HUGE_RISE_PCT / 100 + 1:.0f} either way"
    return f"-{fall_text(fall, rise, fmt)} or +{fmt(rise)}"


def in_prefix(unit: str, *values: float) -> tuple[float, str]:
    """(divisor, suffix) for values in `unit` said in one sentence: the prefix the largest of them calls for
    ("+470 µs ± 400 µs", not "+0.00047 s ± 0.0004 s"; a % attached, any other unit after a space)."""
    divisor, shown = scale_unit(shared_scale(values) or 0.0, unit)
    return divisor, unit_suffix(shown)


def _mde_text(test: RatioTest, mean_baseline: float, unit: str) -> str:
    pct = mde_percent(test, mean_baseline)
    if math.isfinite(pct) and test.scale == "raw" and pct > 100 and math.isfinite(test.mde):
        # values around 0 (a difference, a count): a percentage of a mean near 0 says nothing ("±800%")
        div, suffix = in_prefix(unit, test.mde, mean_baseline)
        mde = test.mde / div
        near = estimate_text(mean_baseline / div, mde)  # two digits: "the baseline's mean, 0 ms" was 0.017 ms
        return f"±{format_pair(mde, mde)[0]}{suffix} (the baseline's mean, {near}{suffix}, is too near 0 for a percentage)"
    if math.isfinite(pct):  # on the log scale a factor either way: "-91% or +970%", not "±970%"
        return detectable_text(pct, test.scale == "log")
    if math.isfinite(test.mde):  # a baseline mean of 0: in the values' unit (once, not "±2.1 ± 2.1")
        div, suffix = in_prefix(unit, test.mde)
        return f"±{format_pair(test.mde / div, test.mde / div)[0]}{suffix}"
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
        div, suffix = in_prefix(unit, test.difference)
        size = f"{_signed(test.difference / div, None)}{suffix}"
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
        size = detectable_text(mde, calibration.get("scale") == "log")
        parts.append(f"this machine shows changes beyond {size} for this workload")
    if fp is not None:
        ci = calibration.get("false_positive_ci")
        low, high = (ci[0], ci[1]) if isinstance(ci, list | tuple) and len(ci) == 2 else (math.nan, math.nan)
        parts.append(
            f"{100 * fp:.3g}% false positives in {calibration.get('runs')} A/A runs "
            f"(95% CI {100 * low:.2g}–{100 * high:.2g}%)"
        )
    return f"; calibration: {', '.join(parts)}" if parts else ""


def _signed(value: float, half_width: float | None) -> str:
    """A difference in the values' unit, signed, with two significant digits at least: "observed 0 ms ± 500 ms"
    was a difference of 30 ms under a wide interval."""
    text = estimate_text(value, half_width)
    return text if text.startswith("-") or float(text) == 0 else "+" + text


def _calibration_warning(test: RatioTest, aa_pct: float | None) -> list[str]:
    change = 100.0 * (test.ratio - 1.0) if math.isfinite(test.ratio) else math.nan
    if aa_pct is None or not test.significant or not math.isfinite(change) or abs(change) >= aa_pct:
        return []
    return [
        # two significant digits, never in exponent notation: an A/A twin at load 20 shows ±280% ("±2.8e+02%")
        f"the change ({change_text(change, aa_pct)}) is within the ±{detectable_size(aa_pct)} an A/A run of this "
        "workload shows on this machine: treat it as unproven"
    ]


ZERO_SPREAD = "both samples have zero spread"  # (verdict.judge drops it for a metric constant by design)


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
    alpha = 1.0 - confidence / 100.0
    constant = sa.stddev == 0 and sb.stddev == 0
    # every value equal on each side: no spread for a few values to misjudge, only the rank test's reach
    for name, s in zip(names, (sa, sb), strict=True):
        if s.n < FEW_TRIALS and not early and not constant:
            out.append(f"{name} has only {s.n} values; fewer than {FEW_TRIALS} make a fragile verdict")
    if constant:
        out.append(f"{ZERO_SPREAD}; suspect a coarse clock, a cached result or a constant")
        if sa.mean != sb.mean and not can_reach(cross, alpha):
            out.append(
                f"a different value on each side, but {cross['test']} cannot reach p < {alpha:g} with "
                f"{sa.n} and {sb.n} values: only more trials can prove it"
            )
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


def advice_words(adv: Advice) -> str:
    """Where the next repetitions buy most, in words: "more boots", "more trials per boot"."""
    return f"more {adv.unit}s" if adv.next == "units" else f"more trials per {adv.unit}"


def levels_dict(report: LevelsReport) -> JSONObject:
    """A LevelsReport as a comparison's JSON holds it: its advice's `next` in words."""
    out = report.to_dict()
    adv = out.get("advice")
    if report.advice is not None and isinstance(adv, dict):
        adv["next"] = advice_words(report.advice)
    return out
