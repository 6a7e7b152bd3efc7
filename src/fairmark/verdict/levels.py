"""The wording of a verdict whose unit is above the trial (runs, boots, hosts as levels: stats/levels.py tests
them and returns numbers): the sentence with the unit counts, the arrangement in time (stats/timeorder.py) and
where the next repetitions help most, or, with one unit per side, why no claim is made."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from fairmark.stats.arrays import Values
from fairmark.stats.compare import change_of, verdict_fields
from fairmark.stats.levels import (
    Advice,
    Levels,
    LevelsReport,
    Unit,
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


def advice_sentence(lv: Levels, adv: Advice | None, mean_baseline: float) -> str:
    if adv is None:
        return f"where more repetitions help most: unknown until each side has ≥ 2 {lv.unit}s"
    pct = 100.0 / abs(mean_baseline) if mean_baseline else math.nan
    return (
        f"{100 * adv.unit_share:.0f}% of a {lv.unit} mean's variance is {lv.unit}-to-{lv.unit}; the next repetitions "
        f"buy most as {advice_words(adv)} (standard error {adv.se_now * pct:.2g}% now, "
        f"{adv.se_more_units * pct:.2g}% with twice the {lv.unit}s, "
        f"{adv.se_more_trials * pct:.2g}% with twice the trials per {lv.unit})"
    )


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
    if order:
        counts += f"; {order_sentence(order, level)}"
    return replace(
        below,
        **verdict_fields(test, ma),
        change=change_of(test, below.better),
        sentence=f"{sentence} ({counts}); {advice_sentence(lv, adv, ma)}",
        levels=LevelsReport(lv, adv, order=order),
        claim=True,
        sequential=to_dict(decided[1], sequential, test.scale == "log") if decided and sequential else None,
        warnings=tuple(w for w in below.warnings if "disagree" not in w),
    )


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
    if texts is None:
        return f"{c.change_percent:+.3g}% (no interval)"
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
