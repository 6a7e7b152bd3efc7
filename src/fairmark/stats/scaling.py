"""The shape of a scaling curve (one cell per sweep point): a peak or a decline is named only when proven.

"← peak" on 41.3 ± 2.6 next to 43.4 ± 2.0 Gbit/s is noise read as structure. A point is the peak only when it
is better than each of its neighbours by Welch's t at the run's level; a decline after it only when a later
point is worse than the peak by the same test. When no two neighbours differ, the curve is "flat within ±x%":
every point lies within x% of the best, the CI of the difference included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fairmark.stats.describe import describe
from fairmark.stats.tdist import exact_t


@dataclass(frozen=True)
class CurveShape:
    best: int  # index of the point with the best mean (proven or not)
    peak: int | None  # index of the proven peak
    declines_after_peak: bool
    flat_pct: float | None  # "flat within ±x%" when no two neighbours differ significantly


def _diff(a: Sequence[float], b: Sequence[float], confidence: float) -> tuple[float, float]:
    """(mean_b − mean_a, Welch CI half-width of it); the half-width is 0 without spread, nan below 2 values."""
    sa, sb = describe(a), describe(b)
    if sa.n < 2 or sb.n < 2:
        return sb.mean - sa.mean, math.nan
    va, vb = sa.stddev**2 / sa.n, sb.stddev**2 / sb.n
    if va + vb == 0:
        return sb.mean - sa.mean, 0.0
    df = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    return sb.mean - sa.mean, exact_t(confidence, df) * math.sqrt(va + vb)


def _better(a: Sequence[float], b: Sequence[float], higher: bool, confidence: float) -> bool:
    """b is significantly better than a."""
    d, e = _diff(a, b, confidence)
    return bool(math.isfinite(e) and (d if higher else -d) > e)


def curve_shape(points: Sequence[Sequence[float]], *, higher: bool, confidence: float = 95.0) -> CurveShape:
    """The shape of a curve given each point's values (in sweep order)."""
    means = [describe(v).mean for v in points]
    best = max(range(len(points)), key=lambda i: means[i] if higher else -means[i])
    neighbours = [j for j in (best - 1, best + 1) if 0 <= j < len(points)]
    proven = bool(neighbours) and all(
        _better(points[j], points[best], higher, confidence) for j in neighbours
    )
    peak = best if proven else None
    declines = proven and any(_better(points[j], points[best], higher, confidence) for j in
                              range(best + 1, len(points)))  # fmt: skip
    steps = any(
        _better(points[i], points[i + 1], h, confidence)
        for i in range(len(points) - 1)
        for h in (True, False)
    )
    flat = None
    if not steps and means[best]:
        widths = []
        for i in range(len(points)):
            d, e = _diff(points[best], points[i], confidence)
            widths.append(100.0 * (abs(d) + (e if math.isfinite(e) else math.inf)) / abs(means[best]))
        flat = max(widths)
    return CurveShape(best, peak, declines, flat)
