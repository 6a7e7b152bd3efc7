"""False discovery rate across the comparisons of a run: 40 metrics at α = 5% find two "differences" by
chance; Benjamini-Hochberg keeps the expected share of false discoveries at α."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def bh_adjust(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), same order; nan stays nan and is not counted."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, math.nan)
    ok = ~np.isnan(p)
    if ok.sum() == 1:  # one comparison: q = p (and no scipy.stats import, 0.5 s, for `fairmark compare A B`)
        out[ok] = np.clip(p[ok], 0.0, 1.0)
    elif ok.any():
        from scipy import stats  # heavy import, only when there are several p-values

        out[ok] = stats.false_discovery_control(np.clip(p[ok], 0.0, 1.0), method="bh")
    return [float(v) for v in out]


def benjamini_hochberg(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses are discoveries at false discovery rate `alpha` (same order as given)."""
    return [bool(q <= alpha) for q in bh_adjust(p_values)]
