"""A sample's warnings in words: outliers (flagged, never dropped), drift over trial order, correlated
neighbours, two modes — stats/checks.py finds them, this says them for a person deciding whether to trust a
verdict."""

from __future__ import annotations

from fairmark.stats.arrays import Values
from fairmark.stats.checks import (
    OUTLIER_ALPHA,
    OUTLIER_Z,
    bimodal_split,
    drift,
    outlier_indices,
    serial_correlation,
)
from fairmark.stats.describe import median
from fairmark.stats.digits import format_value


def sample_warnings(values: Values, *, unit: str = "") -> list[str]:
    """Plain sentences about outliers, drift and two modes in `values` (given in trial order)."""
    out = []
    idx = outlier_indices(values)
    if idx:
        shown = ", ".join(f"#{i + 1} ({format_value(values[i], unit=unit)})" for i in idx[:8])
        more = f" and {len(idx) - 8} more" if len(idx) > 8 else ""
        out.append(
            f"outliers (MAD modified z > {OUTLIER_Z} and outside the rest's {100 - OUTLIER_ALPHA * 100:g}% "
            f"prediction interval): trial-order values {shown}{more}; kept, not dropped"
        )
    trend = drift(values)
    if trend:
        way = "rise" if trend[0] > 0 else "fall"
        out.append(
            f"drift: values {way} over trial order (trend p = {trend[1]:.2g}, allowing for serial "
            "correlation); the machine changed during the run (heat, caches, a neighbour)"
        )
    serial = serial_correlation(values)
    if serial and not trend:
        out.append(
            f"consecutive trials are correlated (lag-1 r = {serial[0]:.2f}, p = {serial[1]:.2g}): the machine "
            "wanders, so a CI that assumes independent trials is too narrow (a verdict paired by round is not "
            "biased by what A and B share)"
        )
    split = bimodal_split(values)
    if split:
        low, high = split
        out.append(
            f"two modes: {low.size} values near {format_value(median(low), unit=unit)} and "
            f"{high.size} near {format_value(median(high), unit=unit)}; the mean describes neither"
        )
    return out
