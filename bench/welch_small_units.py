"""Welch's t on unit means (boots, runs, hosts) with 2 to 5 units on a side: the level it keeps, computed (not
sampled) by quadrature over both sides' sample variances, and the corrected level α′ that keeps 5% in the worst
case — the table stats.levels.SMALL_ALPHA holds.

The verdict's test with ≥ 2 units a side (stats.levels.unit_test) rejects when Welch's t on the unit means AND
the nested model do; with equal trials per unit the nested model is the pooled t on the unit means, and both
share the numerator. So with unit means normal (side i: nᵢ means of variance τᵢ²), given the two sample
variances the rejection probability is exact: P(|D| > max(t_W·se_W, t_P·se_P)), D ~ N(0, τ₁²/n₁ + τ₂²/n₂). It is
averaged over s₁², s₂² (χ² quantile midpoints, K per side) and maximised over θ = (τ₁²/n₁)/(τ₁²/n₁ + τ₂²/n₂), the
share of the difference's variance from side 1, the side with fewer units (the only nuisance parameter; with equal
counts θ and 1 − θ are the same case). The worst θ lies between 0.95 and 0.9995 in every pair, where THETAS is
dense; K 120 agrees with K 1200 within 0.001 points at 2 vs 6. Welch's df (Satterthwaite) is
liberal when the side with 2–3 units is the noisy one (θ → 1): its sample variance on 1–2 df is often small,
which makes both t large and the df large. α′ is the largest level (bisection, rounded down) at which the
worst θ keeps 5%; the verdict then uses t at α′ on Satterthwaite's df, i.e. on the df whose 95% quantile that is.

Run: `.venv/bin/python bench/welch_small_units.py [--k 300]` (about 15 s of CPU a pair)."""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

THETAS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.985, 0.99, 0.9925, 0.995, 0.9975, 0.999, 0.9995)
SMALL = (2, 3, 4, 5)
LARGE = (2, 3, 4, 5, 6, 8, 12, 20, 40, 100)


def worst(n1: int, n2: int, alpha: float, k: int, *, pooled: bool = True) -> tuple[float, float]:
    """The largest rejection rate over θ (and where) of the verdict's two-part test at Welch's level alpha."""
    u = (np.arange(k) + 0.5) / k
    q1, q2 = np.meshgrid(*(stats.chi2.ppf(u, n - 1) / (n - 1) for n in (n1, n2)), indexing="ij")
    best = (0.0, 0.0)
    for th in THETAS:
        v1, v2 = th * q1, (1 - th) * q2
        df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
        c = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(v1 + v2)
        if pooled:
            sp2 = ((n1 - 1) * n1 * th * q1 + (n2 - 1) * n2 * (1 - th) * q2) / (n1 + n2 - 2)
            c = np.maximum(c, stats.t.ppf(0.975, n1 + n2 - 2) * np.sqrt(sp2 * (1 / n1 + 1 / n2)))
        rate = float((2 * stats.norm.sf(c)).mean())
        best = max(best, (rate, float(th)))
    return best


def calibrate(n1: int, n2: int, k: int) -> float:
    lo, hi = 0.0, 0.05
    if worst(n1, n2, hi, k)[0] <= 0.05:
        return hi
    for _ in range(8):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst(n1, n2, mid, k)[0] <= 0.05 else (lo, mid)
    return lo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=120)
    ap.add_argument("--small", type=int, nargs="*", default=list(SMALL))
    args = ap.parse_args()
    print("| units | Welch (Satterthwaite) ∩ pooled at 5%: worst rate (θ) | α′ | worst rate at α′ |")
    print("|---|---|---|---|")
    for ns in args.small:
        for nl in (n for n in LARGE if n >= ns):
            rate, th = worst(ns, nl, 0.05, args.k)
            a = calibrate(ns, nl, args.k)
            print(
                f"| {ns} vs {nl} | {100 * rate:.2f}% ({th:.4f}) | {100 * a:.3f}% | "
                f"{100 * worst(ns, nl, a, args.k)[0]:.2f}% |",
                flush=True,
            )


if __name__ == "__main__":
    main()
