"""A scaling curve's shape in words (stats/scaling.py proves it: a peak, a rise or a decline is named only when
its pairs are), for the scaling table of a run's report."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fairmark.stats.digits import format_pair
from fairmark.stats.scaling import CurveShape

FLAT_SAYS_NOTHING_PCT = (
    50.0  # "flat within ±x%" beyond this: the points could differ twofold — no shape at all
)


def shape_summary(
    shape: CurveShape, parameter: str, xs: Sequence[object], means: Sequence[float], *, beyond: str = ""
) -> str:
    """The curve's shape in words, claiming only what the tests proved. `beyond`: the sweep's values after the
    curve's last point that have no measurement (their trials failed), so the curve's end is not the sweep's."""
    at = f"{parameter} = {xs[shape.best]}"
    holm_note = f"Holm across {shape.pairs} pair{'s' if shape.pairs != 1 else ''}"
    if (
        shape.flat_pct is not None and shape.flat_pct > FLAT_SAYS_NOTHING_PCT
    ):  # "flat within ±250%" said nothing
        return (
            f"nothing can be said of its shape: no two points differ, but they could differ by up to "
            f"±{_pct(shape.flat_pct)}% (too few trials or too much noise; {holm_note})"
        )
    if shape.flat_pct is not None:
        return f"flat within ±{_pct(shape.flat_pct)}% (no two points differ; {holm_note})"
    tied = [str(xs[i]) for i in shape.tied]
    also = f"; {parameter} = {', '.join(tied)} not proven worse" if tied and len(tied) < len(xs) - 1 else ""
    above = f"better than {parameter} = {xs[shape.rise_from]}" if shape.rise_from is not None else ""
    decline = ""
    if shape.decline_to is not None:
        j = shape.decline_to
        change = 100.0 * (means[j] - means[shape.best]) / means[shape.best] if means[shape.best] else math.nan
        verb = "declines" if shape.higher else "worsens"
        decline = f"{verb} after it: {_signed(change)}% at {parameter} = {xs[j]}"
    if shape.peak is not None:
        return f"peak at {at}: {above} before it, and {decline}{also} ({holm_note})"
    if shape.rises_to_end:
        end = (
            f"its last measured point ({parameter} = {beyond}: under 2 successful trials)"
            if beyond
            else "its last point"
        )
        where = "the last measured point" if beyond else "the end of the sweep"
        verb = "rises" if shape.higher else "improves"  # a time that rises is getting worse
        if (
            shape.tied
        ):  # 101 → 196 → 204: the last two not told apart — it levels off, it does not rise to the end
            level = f"{parameter} = {xs[min(shape.tied)]}"
            return (
                f"{verb}, then levels off from {level}: best mean at {at}, {end}, {above}{also} ({holm_note})"
            )
        return f"{verb} to {where}: best at {at}, {end}, {above}{also} ({holm_note})"
    if above:
        later = len(xs) - 1 - shape.best
        return (
            f"best at {at}, {above}; no proven decline in the {later} point(s) after it{also} ({holm_note})"
        )
    if decline:
        where = "its first point" if shape.best == 0 else "no earlier point proven worse"
        return f"best at {at} ({where}); {decline}{also} ({holm_note})"
    return f"best mean at {at}, not proven better than any other point ({holm_note})"


def _pct(value: float) -> str:
    return format_pair(value, value)[0]


def _signed(value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    text = f"{value:.2g}" if abs(value) < 10 else f"{value:.0f}"
    return text if text.startswith("-") else "+" + text
