"""Units (runs, boots) in the order they were measured (issue 31 item 6).

When the unit is the observation, the verdict treats the unit means as independent. A machine that drifts from
run to run breaks that in one direction only: measured in blocks — A A A A then B B B B, or ten baseline runs
then the run checked — neighbouring units share their drift, each side's units look alike (their spread
understates the drift) and the two blocks differ by the drift between them. With run offsets AR(1) at φ 0.6,
`compare-runs A1..A4 --vs B1..B4` of runs made AAAA BBBB claimed a difference 16.5% of the time at 95%
(alternating ABAB: 1.5%). So the units' start times decide:

* the arrangement in time: interleaved (the sides alternate), or in blocks (one switch from side to side);
* the lag-1 autocorrelation r₁ of the unit means around their sides' means, in time order; the φ allowed for is
  an upper bound on it — r₁ corrected for its bias at n units (−(1 + 3φ)/n, and −2/n for the two fitted means),
  plus PHI_MARGIN standard errors, as stats.changepoints does for a history: a few units cannot tell φ 0.3 from
  0.6, and a φ estimated low lets drift pass for a change;
* under AR(1) noise at that φ, the variance of the difference of the sides' means, and the expected value of
  what the test estimates it by (each side's sample variance of its unit means, biased low when its units are
  neighbours), for these very positions. Their ratio, when above 1, widens the interval (its square root
  multiplies the standard error). Interleaved sides get a ratio below 1 and are left as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

PHI_MARGIN = 1.5
PHI_MAX = 0.95


@dataclass(frozen=True)
class TimeOrder:
    arrangement: str  # "interleaved" | "in blocks"
    sides: str  # the sides in time order, e.g. "AAAABBBB"
    r1: float  # the lag-1 autocorrelation of the unit means around their sides' means, in time order
    phi: float  # the autocorrelation allowed for (an upper bound on φ)
    inflation: float  # the variance of the difference / what the test estimates it by, at φ (≥ 1 applied)

    @property
    def widened(self) -> bool:
        return self.inflation > 1.0

    def to_dict(self) -> dict[str, object]:
        return {
            "arrangement": self.arrangement,
            "sides": self.sides,
            "r1": self.r1,
            "phi": self.phi,
            "inflation": self.inflation,
        }


def time_order(
    names_a: Sequence[str],
    means_a: Sequence[float],
    names_b: Sequence[str],
    means_b: Sequence[float],
    starts: Mapping[str, float],
) -> TimeOrder | None:
    """The units' arrangement in time and the widening it calls for; None when a unit's start is unknown."""
    if not all(u in starts for u in (*names_a, *names_b)) or min(len(names_a), len(names_b)) < 1:
        return None
    ma, mb = float(np.mean(means_a)), float(np.mean(means_b))
    units = [(starts[u], 0, m - ma) for u, m in zip(names_a, means_a, strict=True)]
    units += [(starts[u], 1, m - mb) for u, m in zip(names_b, means_b, strict=True)]
    units.sort(key=lambda x: x[0])
    side = np.array([s for _, s, _ in units])
    resid = np.array([r for _, _, r in units])
    switches = int(np.sum(side[1:] != side[:-1]))
    r1 = _lag1(resid)
    phi = phi_allowed(r1, len(units))
    pos_a, pos_b = np.flatnonzero(side == 0), np.flatnonzero(side == 1)
    return TimeOrder(
        "in blocks" if switches == 1 else "interleaved",
        "".join("AB"[s] for s in side),
        r1,
        phi,
        inflation(pos_a, pos_b, phi),
    )


def _lag1(r: np.ndarray) -> float:
    denom = float(r @ r)
    return float(r[1:] @ r[:-1]) / denom if denom > 0 and r.size > 2 else 0.0


def phi_allowed(r1: float, n: int) -> float:
    """An upper bound on φ from r₁ of n residuals around two fitted means (see the module's docstring)."""
    phi = r1 + (1 + 3 * r1) / n + 2.0 / n
    return float(min(max(phi + PHI_MARGIN * math.sqrt(max(1 - phi * phi, 0.05) / n), 0.0), PHI_MAX))


def inflation(pos_a: np.ndarray, pos_b: np.ndarray, phi: float) -> float:
    """Var(mean B − mean A) under AR(1) at φ over these positions, divided by the expectation of the test's
    estimate of it (Welch: s_A²/n_A + s_B²/n_B; a side of one unit takes the other side's s²)."""
    if phi <= 0:
        return 1.0
    pos = np.concatenate([pos_a, pos_b]).astype(float)
    corr = phi ** np.abs(pos[:, None] - pos[None, :])
    na, nb = pos_a.size, pos_b.size
    aa, bb, ab = corr[:na, :na].mean(), corr[na:, na:].mean(), corr[:na, na:].mean()
    var_diff = aa + bb - 2 * ab
    ea = na * (1 - aa) / (na - 1) if na > 1 else None  # E[s²]/σ² of each side's unit means
    eb = nb * (1 - bb) / (nb - 1) if nb > 1 else None
    ea = ea if ea is not None else eb
    eb = eb if eb is not None else ea
    if ea is None or eb is None:
        return 1.0
    estimated = ea / na + eb / nb
    return float(var_diff / estimated) if estimated > 0 else 1.0
