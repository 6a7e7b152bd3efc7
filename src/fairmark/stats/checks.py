"""Warnings about one sample: outliers (flagged, never dropped), drift over trial order, two modes.

Each check answers in plain sentences because the reader is a person deciding whether to trust a verdict.
Dropping outliers is what turned a 31% regression into "~" in benchstat v1 (golang/go#19634): here they are
only named.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fairmark.stats.describe import as_array
from fairmark.stats.digits import format_value

OUTLIER_Z = 3.5  # Iglewicz & Hoaglin's cut-off for the MAD modified z-score
DRIFT_P = 0.01
DRIFT_MIN_N = 8  # Kendall's tau has no power below this
BIMODAL_MIN_N = 8
BIMODAL_GAP = 4.0  # a gap this many within-cluster stddevs wide splits the sample in two


def modified_z(values: Sequence[float]) -> np.ndarray:
    """0.6745·(x − median)/MAD. When MAD is 0 (over half the values equal) the mean absolute deviation
    stands in (scaled by 0.7979 so both estimate σ for normal data); all zeros when both are 0."""
    x = as_array(values)
    dev = x - np.median(x)
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        return 0.6745 * dev / mad
    mean_ad = float(np.mean(np.abs(dev)))
    return dev / (1.253314 * mean_ad) if mean_ad > 0 else np.zeros_like(x)


def outlier_indices(values: Sequence[float]) -> list[int]:
    """0-based positions (in the order given, i.e. trial order) whose modified z-score exceeds 3.5."""
    if len(values) < 3:
        return []
    return [int(i) for i in np.flatnonzero(np.abs(modified_z(values)) > OUTLIER_Z)]


def drift(values: Sequence[float]) -> tuple[float, float] | None:
    """(Kendall tau, p) of value against trial index when the trend is significant at p < 0.01, else None."""
    x = as_array(values)
    if x.size < DRIFT_MIN_N or np.ptp(x) == 0:
        return None
    from scipy import stats  # heavy import, only when there is something to test

    res = stats.kendalltau(np.arange(x.size), x)
    if np.isnan(res.pvalue) or res.pvalue >= DRIFT_P:
        return None
    return float(res.statistic), float(res.pvalue)


def bimodal_split(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """The two clusters when the widest gap in the sorted sample is ≥ 4 pooled within-cluster stddevs and
    each side holds at least max(3, n/5) values; None otherwise. A gap heuristic: cheap, explainable in a
    line."""
    x = np.sort(as_array(values))
    n = x.size
    if n < BIMODAL_MIN_N or np.ptp(x) == 0:
        return None
    least = max(3, n // 5)
    cuts = range(least, n - least + 1)
    if not cuts:
        return None
    gaps = [x[i] - x[i - 1] for i in cuts]
    cut = cuts[int(np.argmax(gaps))]
    low, high = x[:cut], x[cut:]
    within = np.sqrt(((low.size - 1) * low.var(ddof=1) + (high.size - 1) * high.var(ddof=1)) / (n - 2))
    if x[cut] - x[cut - 1] < BIMODAL_GAP * within:
        return None
    return low, high


def sample_warnings(values: Sequence[float], *, unit: str = "") -> list[str]:
    """Plain sentences about outliers, drift and two modes in `values` (given in trial order)."""
    out = []
    idx = outlier_indices(values)
    if idx:
        shown = ", ".join(f"#{i + 1} ({format_value(values[i], unit=unit)})" for i in idx[:8])
        more = f" and {len(idx) - 8} more" if len(idx) > 8 else ""
        out.append(
            f"outliers (MAD modified z > {OUTLIER_Z}): trial-order values {shown}{more}; kept, not dropped"
        )
    trend = drift(values)
    if trend:
        way = "rise" if trend[0] > 0 else "fall"
        out.append(
            f"drift: values {way} over trial order (Kendall tau = {trend[0]:.2f}, p = {trend[1]:.2g}); "
            "the machine changed during the run (heat, caches, a neighbour)"
        )
    split = bimodal_split(values)
    if split:
        low, high = split
        out.append(
            f"two modes: {low.size} values near {format_value(float(np.median(low)), unit=unit)} and "
            f"{high.size} near {format_value(float(np.median(high)), unit=unit)}; the mean describes neither"
        )
    return out
