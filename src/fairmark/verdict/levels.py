"""The wording of a verdict whose unit is above the trial (runs, boots, hosts as levels: stats/levels.py tests
them and returns numbers): the sentence with the unit counts, the arrangement in time (stats/timeorder.py) and
where the next repetitions help most, or, with one unit per side, why no claim is made."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from fairmark.stats.arrays import Unit, Values
from fairmark.stats.compare import change_of, verdict_fields
from fairmark.stats.digits import format_spread
from fairmark.stats.levels import (
    Advice,
    Levels,
    LevelsReport,
    Split,
    WithinBound,
    advice,
    levels,
    time_order_of,
    unit_test,
)
from fairmark.stats.sequential import Design, to_dict, unit_ratio_test
from fairmark.stats.timeorder import TimeOrder
from fairmark.verdict.compare import (
    Comparison,
    advice_words,
    change_text,
    compare,
    percent_texts,
    sequential_sentence,
    verdict_sentence,
)

NO_CLAIM = (
    "one {unit} per side: the {unit}-to-{unit} variance is unknown, so no difference can be claimed (a {unit} "
    "offset alone can look like a change); measure ≥ 2 {unit}s per side"
)
WHY_LEVEL = {
    "run": "the sides are different runs (not interleaved round by round: what changed between them is in the "
    "difference)",
    "boot": "the sides were measured in different boots",
    "host": "the sides were measured on different hosts",
}
# the old name, for callers that spell the boot case
UNKNOWN_BOOT_VARIANCE = NO_CLAIM


def advice_sentence(lv: Levels, adv: Advice | None, mean_baseline: float, names: tuple[str, str]) -> str:
    """How a unit mean's variance splits on each side (with its interval), and where the next repetitions buy
    most precision, on the verdict's scale."""
    shares = share_clause(lv, names)
    if adv is None:
        return f"{shares}; where more repetitions help most: unknown until each side has ≥ 2 {lv.unit}s"
    # two significant digits, never in exponent notation ("1.1e+02%" of a side of 3 trials a boot at load 20)
    if adv.scale == "log":  # a standard error of the log ratio, as the change of the ratio it stands for

        def pct(se: float) -> str:
            return format_spread(100 * math.expm1(se), "%")
    else:

        def pct(se: float) -> str:
            return format_spread(100 * se / abs(mean_baseline), "%") if mean_baseline else "unknown"

    return (
        f"{shares}; the next repetitions buy most as {advice_words(adv)} (standard error {pct(adv.se_now)} now, "
        f"{pct(adv.se_more_units)} with twice the {lv.unit}s, "
        f"{pct(adv.se_more_trials)} with twice the trials per {lv.unit})"
    )


def share_clause(lv: Levels, names: tuple[str, str]) -> str:
    """ "boot-to-boot share of a boot mean's variance: default 0% (0% to 86%), noinit 93% (61% to 99%)" — or
    why a side's is unknown; "too few boots to split the variance" when neither side's is known."""
    u = lv.unit

    def one(name: str, s: Split | None) -> str | None:
        if s is None or s.units < 2:
            return f"{name} unknown (one {u})"
        if not math.isfinite(s.sd_trial):
            return f"{name} unknown (one trial per {u})"
        if not math.isfinite(s.share):
            return f"{name} unknown (no spread)"
        return f"{name} {_pct(s.share)} ({_pct(s.share_low)} to {_pct(s.share_high)})"

    said = [one(n, s) for n, s in zip(names, (lv.baseline, lv.other), strict=True)]
    if all(t is None or "unknown" in t for t in said):
        return f"too few {u}s (or trials per {u}) to split the variance of a {u} mean"
    scale = ", of the logarithms as tested" if lv.scale == "log" else ""
    return f"{u}-to-{u} share of a {u} mean's variance{scale}: {', '.join(t for t in said if t)}"


def _pct(x: float) -> str:
    """A share in whole percent, never "100%" for one below 1 nor "0%" for one above 0 (an interval's end)."""
    v = round(100 * x)
    if v == 100 and x < 1:
        return ">99%"
    if v == 0 and x > 0:
        return "<1%"
    return f"{v}%"


def compare_levels(
    a: Values,
    units_a: Sequence[Unit],
    b: Values,
    units_b: Sequence[Unit],
    *,
    level: str = "boot",
    confidence: float = 95.0,
    within: Comparison | None = None,
    sequential: Design | None = None,
    starts: Mapping[str, float] | None = None,
) -> Comparison:
    """The verdict of two sides measured in different units (runs, boots, hosts): the unit is the observation.
    The returned Comparison keeps the trial-level summaries and ministat lines; its verdict fields (significant,
    p_value, design, ratio and its CI, mde, change, sentence) are the unit-level test's, and `levels` holds the
    per-level n and sd with the advice. `within`: the comparison at the level below (e.g. paired by round
    inside the runs both sides share), shown when no claim can be made; by default the trials as independent
    samples."""
    below = within or compare(a, b, confidence=confidence)
    lv = levels(a, units_a, b, units_b, level)
    decided = unit_ratio_test(lv.groups_baseline, lv.groups_other, sequential, level) if sequential else None
    order = time_order_of(lv, units_a, units_b, starts)
    widen = order.inflation if order else 1.0
    test = decided[0] if decided else unit_test(lv, confidence=confidence, inflation=widen)
    ma = float(np.mean(lv.unit_means_baseline))
    names = (below.name_baseline, below.name_other)
    if test is None:
        return _no_claim(below, lv, level, names)
    adv = advice(lv)
    sentence = verdict_sentence(names, test, ma, test.significant, below.better, below.unit, confidence)
    if decided:  # boots = "auto": the boot-level sequential test the run stopped by
        per = f"{level}s per variant"
        sentence = sequential_sentence(names, decided, sequential, below.better, below.unit, confidence, per)
    counts = f"{lv.units_baseline} vs {lv.units_other} {level}s as the unit"
    if 1 in (lv.units_baseline, lv.units_other):
        counts += f"; the single {level} is assumed to vary like the others"
    if not decided and not test.significant and test.df < FEW_DF:
        counts += f"; {few_df(test.df)}"
    if order:
        counts += f"; {order_sentence(order, level)}"
    return replace(
        below,
        **verdict_fields(test, ma),
        change=change_of(test, below.better),
        sentence=f"{sentence} ({counts}); {advice_sentence(lv, adv, ma, names)}",
        levels=LevelsReport(lv, adv, order=order),
        claim=True,
        sequential=to_dict(decided[1], sequential, test.scale == "log") if decided and sequential else None,
        warnings=tuple(w for w in below.warnings if "disagree" not in w),
    )


FEW_DF = 3.0  # below, a detectable change is over 1.8 times the interval's half-width (stats.power)


def few_df(df: float) -> str:
    """Why "would detect -70% or +190%" stands beside "-30% to +40%" (2 vs 2 boots): both come from one spread of
    the unit means on one df (1.0), and the 80% power is averaged over the true spread, which so few df allow to
    be many times the one seen (stats.power: the factor is 39 at df 1 against the interval's t of 12.7)."""
    return f"interval and detectable change on df {df:.1f}"


def _no_claim(below: Comparison, lv: Levels, level: str, names: tuple[str, str]) -> Comparison:
    """One unit per side: the difference with the interval of the level below, labelled as such; no claim."""
    why = NO_CLAIM.format(unit=level)
    within = _within_text(below)
    return replace(
        below,
        significant=False,
        change="none",
        p_value=math.nan,
        design=f"one {level} per side",
        n_pairs=None,
        ratio_ci_low=math.nan,
        ratio_ci_high=math.nan,
        mde_percent=math.nan,
        claim=False,
        sentence=f"{names[1]} vs {names[0]}: no difference claimed: {WHY_LEVEL.get(level, '')}, and {why}. "
        f"Within the {level} (a lower bound on the uncertainty, not a verdict): {within}",
        warnings=(*(w for w in below.warnings if "disagree" not in w), why),
        levels=LevelsReport(
            lv,
            within_lower_bound=WithinBound(
                below.design,
                below.ratio,
                below.ratio_ci_low,
                below.ratio_ci_high,
                below.p_value,
                below.significant,
            ),
        ),
    )


def _within_text(c: Comparison) -> str:
    texts = percent_texts(c.ratio, c.ratio_ci_low, c.ratio_ci_high, False)
    if texts is None and not math.isfinite(c.change_percent):  # user_s of 0 ms on one side: no ratio to state
        return "no percentage (a mean of 0)"
    if texts is None:  # no spread (an exact change: four digits), or an unbounded interval (two digits)
        hw = None if c.constant else math.inf
        return f"{change_text(c.change_percent, hw)} (no interval)"  # not :g, which wrote +1.23e+03%
    how = "paired by round" if c.design == "paired by round" else "trials as independent samples"
    return f"{texts[0]} ({c.confidence:g}% interval, {how}: {texts[1]} to {texts[2]})"


def order_sentence(o: TimeOrder, unit: str) -> str:
    """The units' arrangement in time, and the widening it called for."""
    head = f"the {unit}s were measured {o.arrangement} ({o.sides} in time order)"
    if not o.widened:
        return head
    return (
        f"{head}: a machine that drifts from {unit} to {unit} moves a block as a whole, so the interval is "
        f"widened ×{math.sqrt(o.inflation):.2f} for drift up to a lag-1 autocorrelation of "
        f"{o.phi:.2f} between consecutive {unit}s (r₁ = {o.r1:.2f} around the sides' means); "
        f"{unit}s alternating between the sides tell drift and change apart"
    )


def order_head(o: TimeOrder, unit: str) -> str:
    """What every verdict over the same units shares: how they were arranged in time, and what that does —
    a screen of several verdicts says it once (issue 34), each verdict then only its own widening."""
    head = f"the {unit}s were measured {o.arrangement} ({o.sides} in time order)"
    if o.arrangement == "interleaved":
        return head
    return (
        f"{head}: a machine that drifts from {unit} to {unit} moves a block as a whole, so an interval may be "
        f"widened for drift between consecutive {unit}s; {unit}s alternating between the sides tell drift and "
        "change apart"
    )


def order_brief(o: TimeOrder) -> str:
    """A verdict's own part of its sentence, the arrangement said once above it ("" when not widened)."""
    if not o.widened:
        return ""
    return (
        f"the interval widened ×{math.sqrt(o.inflation):.2f} for drift up to a lag-1 autocorrelation of "
        f"{o.phi:.2f} "
        f"(r₁ = {o.r1:.2f})"
    )


def said_once(items: Sequence[tuple[str, object]]) -> tuple[str | None, list[str]]:
    """(the time-order sentence to say once, each verdict's sentence without it) for a screen of verdicts:
    `items` holds (sentence, Comparison.levels) pairs. When the verdicts' units do not share one arrangement,
    (None, the sentences as they are)."""
    orders = [
        (s, getattr(lv, "order", None), getattr(getattr(lv, "levels", None), "unit", "")) for s, lv in items
    ]
    heads = {order_head(o, unit) for _, o, unit in orders if isinstance(o, TimeOrder)}
    if len(heads) != 1 or sum(isinstance(o, TimeOrder) for _, o, _ in orders) < 2:
        return None, [s for s, _ in items]
    out = []
    for s, o, unit in orders:
        if isinstance(o, TimeOrder):
            own = order_brief(o)
            s = s.replace(f"; {order_sentence(o, unit)}", f"; {own}" if own else "")
        out.append(s)
    return heads.pop(), out
