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
    if ok.any():
        out[ok] = _bh(np.clip(p[ok], 0.0, 1.0))
    return [float(v) for v in out]


def _bh(p: np.ndarray) -> np.ndarray:
    """scipy.stats.false_discovery_control(p, method="bh"), step for step (the same floats; its test compares):
    importing scipy.stats for these few lines was half a second of `fairmark show`."""
    order = np.argsort(p)
    ps = p[order]
    m = ps.size
    ps *= m / np.arange(1, m + 1)
    np.minimum.accumulate(ps[::-1], out=ps[::-1])
    q = np.empty_like(ps)
    q[order] = np.clip(ps, 0.0, 1.0)
    return q


def benjamini_hochberg(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses are discoveries at false discovery rate `alpha` (same order as given)."""
    return [bool(q <= alpha) for q in bh_adjust(p_values)]
