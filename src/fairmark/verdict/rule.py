"""The decisions every gate takes from a verdict, in one place: `run --fail-on-regression PCT`, `check
--threshold PCT` and `bisect --threshold PCT` ask the same question and get the same answer.

*A regression proven beyond X%*: the change is significant after the Benjamini-Hochberg correction across
everything judged together, it is for the worse, and the whole confidence interval of the change lies beyond X%
(the end nearest to "no change" is more than X% worse) — a one-sided test of "worse by more than X%" at half the
level. A point estimate past X% whose interval reaches inside it is not proven: it is a possible regression.
"""

from __future__ import annotations

import math
from typing import Protocol

from fairmark.verdict.compare import Comparison


class Judged(Protocol):
    """A verdict (verdict.Verdict) or a judgement (verdict.judge.Judgement): a comparison and its FDR decision."""

    @property
    def comparison(self) -> Comparison: ...

    @property
    def fdr_significant(self) -> bool: ...


def worse_interval_pct(c: Comparison) -> tuple[float, float] | None:
    """How much worse the other side is than the baseline, as an interval in % of the baseline (positive: worse;
    from the ratio's interval), or None when the interval is unbounded or unknown."""
    low, high = c.ratio_ci_low, c.ratio_ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if c.better == "lower":
        return 100.0 * (low - 1.0), 100.0 * (high - 1.0)
    return 100.0 * (1.0 - high), 100.0 * (1.0 - low)


def worse_pct(c: Comparison) -> float:
    """The point estimate of the worsening, in % of the baseline (negative: better)."""
    return c.percent if c.better == "lower" else -c.percent


def proven(v: Judged) -> bool:
    """Significant on its own and after the Benjamini-Hochberg correction."""
    return v.fdr_significant and v.comparison.significant


def proven_worse(v: Judged) -> bool:
    return proven(v) and v.comparison.change == "worse"


def proven_better(v: Judged) -> bool:
    return proven(v) and v.comparison.change == "better"


def regression_proven(v: Judged, threshold_pct: float) -> bool:
    """Proven worse, and the whole interval of the change beyond `threshold_pct`."""
    ci = worse_interval_pct(v.comparison)
    return proven_worse(v) and ci is not None and ci[0] > threshold_pct


def cleared(v: Judged, threshold_pct: float) -> bool:
    """Proven not to be a regression beyond `threshold_pct`: the whole interval below it."""
    ci = worse_interval_pct(v.comparison)
    return ci is not None and ci[1] < threshold_pct
