"""The ratio B/A and its confidence interval by Fieller's theorem, for the two designs fairmark analyses.

* **Blocked by round** (the verdict of an interleaved run): trial i of A and trial i of B ran in the same round,
  so what the machine did in that round (heat, a neighbour, drift) is shared. The analysis is on the pairs:
  Fieller's interval with the covariance of the two means. It excludes 1 exactly when the paired t test on
  B − A is significant, so the sentence and the verdict never disagree. When the run chose its length from a
  first stage (stats.stopping), the spread comes from that first stage's pairs and the means from all (Stein's
  two-stage design: the false-positive rate is the stated one whatever length the first stage chose).
* **Pooled** (ministat's; `fairmark compare`): two independent samples with a common variance. The interval
  excludes 1 exactly when ministat's |d| > e, so it is the ratio form of ministat's own verdict.

Both solve (m_b − R·m_a)² = t²·(v_b − 2R·c + R²·v_a) for R (v, c: variances and covariance of the means). The
interval is bounded only when the baseline mean is clearly away from zero (m_a² > t²·v_a); else nan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fairmark.stats.tdist import exact_t

POWER = 0.80  # the power at which the minimum detectable effect is stated


@dataclass(frozen=True)
class RatioTest:
    design: str  # "paired by round" | "pooled"
    n_pairs: int | None
    difference: float  # mean_b − mean_a
    se: float  # standard error of the difference
    df: float
    t_quantile: float
    p_value: float
    significant: bool
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    mde: float  # the difference this design detects with 80% power at this level (same unit as the values)


def fieller(ma: float, mb: float, va: float, vb: float, cov: float, t: float) -> tuple[float, float]:
    """The set of R with (mb − R·ma)² ≤ t²·(vb − 2R·cov + R²·va); (nan, nan) when it is unbounded."""
    qa = ma * ma - t * t * va
    if qa <= 0:
        return (math.nan, math.nan)
    mid = ma * mb - t * t * cov
    disc = mid * mid - qa * (mb * mb - t * t * vb)
    root = math.sqrt(max(disc, 0.0))
    return ((mid - root) / qa, (mid + root) / qa)


def _two_sided_p(t: float, df: float) -> float:
    from scipy import special

    return float(2.0 * special.stdtr(df, -abs(t)))


def mde(se: float, df: float, confidence: float) -> float:
    """The smallest true difference a two-sided test at this level detects with 80% power."""
    from scipy import special

    return (exact_t(confidence, df) + float(special.stdtrit(df, POWER))) * se


def _finish(design, n_pairs, ma, mb, va, vb, cov, df, t, confidence) -> RatioTest:
    d = mb - ma
    var_d = va + vb - 2 * cov
    se = math.sqrt(max(var_d, 0.0))
    ratio = mb / ma if ma != 0 else math.nan
    if se == 0:  # no spread at all: the ratio is what it is, but no test statistic exists
        p = 1.0 if d == 0 else 0.0
        return RatioTest(design, n_pairs, d, 0.0, df, t, p, d != 0, ratio, ratio, ratio, 0.0)
    low, high = fieller(ma, mb, va, vb, cov, t)
    return RatioTest(
        design, n_pairs, d, se, df, t, _two_sided_p(d / se, df), bool(abs(d) > t * se), ratio, low, high,
        mde(se, df, confidence),
    )  # fmt: skip


def paired_by_round(
    a: Mapping[int, float], b: Mapping[int, float], *, confidence: float, first_stage: int | None = None
) -> RatioTest | None:
    """The blocked analysis of two cells' values keyed by round; None below 3 complete pairs. `first_stage`:
    the number of rounds from which the run chose its length (its min_trials): the spread is taken from those
    pairs (df = first_stage − 1) when the run went beyond them."""
    rounds = sorted(set(a) & set(b))
    n = len(rounds)
    if n < 3:
        return None
    xa = np.array([a[r] for r in rounds], dtype=float)
    xb = np.array([b[r] for r in rounds], dtype=float)
    k = first_stage if first_stage is not None and 3 <= first_stage < n else n
    cov = np.cov(xa[:k], xb[:k], ddof=1)
    t = exact_t(confidence, k - 1)
    return _finish(
        "paired by round", n, float(xa.mean()), float(xb.mean()), cov[0, 0] / n, cov[1, 1] / n, cov[0, 1] / n,
        k - 1, t, confidence,
    )  # fmt: skip


def pooled(
    ma: float, mb: float, pooled_sd: float, na: int, nb: int, *, t: float, confidence: float
) -> RatioTest:
    """ministat's design (common variance, df = na + nb − 2) in ratio form; `t` is the quantile ministat's
    rule uses (its table in compat mode), so significance is exactly ministat's |d| > e."""
    s2 = pooled_sd * pooled_sd
    return _finish("pooled", None, ma, mb, s2 / na, s2 / nb, 0.0, na + nb - 2, t, confidence)
