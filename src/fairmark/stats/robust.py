"""The robust verdict of two independent samples: Yuen's t on 20%-trimmed means of the logarithms, chosen by a
rule fixed before looking at the difference (issue 38).

Welch's t on the logarithms is the verdict of two independent samples. A few slow values (a daemon waking, a
page fault storm) inflate its variance while most values moved, and it loses the change the rank test sees
(benchstat's Castagnoli/1kB data: most values +1.2%, three slow ones; Welch "no difference", Mann-Whitney
p = 0.007). Yuen's test compares trimmed means (the middle 60% of each sorted sample) with the winsorized
variance and Welch's unequal-variance df, so it keeps Welch's treatment of unequal spreads and ignores the tails.

The rule (`robust_reason`), simulated in bench/verdict_simulation.py, not assumed:
* only for independent samples on the log scale with at least `MIN_N` values a side (a trimmed mean of fewer
  leaves too little: at 5 values Yuen's df come from 3, and its false positives under unequal spreads reached
  7–8% in simulation);
* when an outlier is flagged in either sample (stats.checks.outlier_indices: MAD z and the rest's prediction
  interval, ≤ 1% of normal samples), or
* when Welch's t and the exact Mann-Whitney U disagree at the verdict's level and the two samples' spreads are
  comparable (MAD of the logs within a factor `SPREAD_RATIO`): under very unequal spreads the U test is not a
  test of location (20 values CV 0.5% against 10 CV 5%: 12.5% false positives), and letting its disagreement
  choose the test raised the false positives of that shape from 6.0% to 7.6%.
Otherwise Welch's verdict stands unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairmark.stats.arrays import Floats
from fairmark.stats.checks import outlier_indices
from fairmark.stats.describe import median
from fairmark.stats.paired import RatioTest, _log_part, combine
from fairmark.stats.ranks import RankCheck, can_reach

TRIM = 0.2  # Wilcox's default: a fifth off each end
MIN_N = 8
SPREAD_RATIO = 3.0
DESIGN = "Yuen's t, 20% trimmed"

__all__ = ["DESIGN", "Reason", "robust_reason", "trimmed", "yuen"]


def trimmed(x: Floats, trim: float = TRIM) -> tuple[float, float, int]:
    """(trimmed mean, squared standard error of it, values kept h): the winsorized variance scaled as Yuen's,
    (n − 1)·s_w² / (h·(h − 1))."""
    s = np.sort(x)
    n = s.size
    g = math.floor(trim * n)
    h = n - 2 * g
    w = np.clip(s, s[g], s[n - g - 1])
    var_w = float(np.var(w, ddof=1)) if n > 1 else 0.0
    return float(s[g : n - g].mean()), (n - 1) * var_w / (h * (h - 1)) if h > 1 else math.inf, h


def yuen(a: Floats, b: Floats, *, confidence: float) -> RatioTest | None:
    """Yuen's two-sample t of trimmed means on the logarithms of positive samples: the ratio of the trimmed
    geometric means with its interval; None when a side has no spread left or too few values."""
    (ma, da, ha), (mb, db, hb) = trimmed(np.log(a)), trimmed(np.log(b))
    if ha < 2 or hb < 2 or not (da + db > 0) or not math.isfinite(da + db):
        return None
    df = (da + db) ** 2 / ((da * da / (ha - 1) if da else 0.0) + (db * db / (hb - 1) if db else 0.0))
    part = _log_part(mb - ma, math.sqrt(da + db), df, confidence)
    return combine(DESIGN, "log", None, [part], math.exp(mb - ma), confidence)


def _mad(x: Floats) -> float:
    return median(np.abs(x - median(x)))


@dataclass(frozen=True)
class Reason:
    """Why Yuen's t decided rather than Welch's: outliers flagged (`flagged`: in the baseline, in the other), or
    (none flagged) Welch's t and the Mann-Whitney U test disagree. verdict/compare.py says it in words."""

    flagged: tuple[bool, bool]

    @property
    def disagree(self) -> bool:
        return not any(self.flagged)


def robust_reason(
    samples: tuple[Floats, Floats], welch: RatioTest, cross: RankCheck, alpha: float
) -> Reason | None:
    """Why the verdict of these two independent samples is Yuen's rather than Welch's, or None (Welch's stands).
    `welch`: Welch's test of them; `cross`: the exact Mann-Whitney U of them."""
    a, b = samples
    if welch.design != "Welch" or welch.scale != "log" or welch.constant or min(a.size, b.size) < MIN_N:
        return None
    flagged = (bool(outlier_indices(a)), bool(outlier_indices(b)))
    if any(flagged):
        return Reason(flagged)
    if not can_reach(cross, alpha) or welch.significant == cross["significant"]:
        return None
    spreads = sorted((_mad(np.log(a)), _mad(np.log(b))))
    if spreads[0] > 0 and spreads[1] <= SPREAD_RATIO * spreads[0]:
        return Reason((False, False))
    return None
