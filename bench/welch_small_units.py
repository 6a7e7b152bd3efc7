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
dense; K 150 and K 1200 gave 9.031% and 9.030% at 2 vs 6 at 5%. Welch's df (Satterthwaite) is
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


def rate(
    n1: int, n2: int, alpha: float, k: int, th: float, *, hsu: bool = False, shift: float = 0.0
) -> float:
    """The rejection rate of the verdict's two-part test with Welch's part at level alpha (on Satterthwaite's df,
    or Hsu's min(n1, n2) − 1), θ as above, the true difference `shift` standard errors."""
    u = (np.arange(k) + 0.5) / k
    q1, q2 = np.meshgrid(*(stats.chi2.ppf(u, n - 1) / (n - 1) for n in (n1, n2)), indexing="ij")
    v1, v2 = th * q1, (1 - th) * q2
    df = min(n1, n2) - 1.0 if hsu else (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    c = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(v1 + v2)
    sp2 = ((n1 - 1) * n1 * th * q1 + (n2 - 1) * n2 * (1 - th) * q2) / (n1 + n2 - 2)
    c = np.maximum(c, stats.t.ppf(0.975, n1 + n2 - 2) * np.sqrt(sp2 * (1 / n1 + 1 / n2)))
    return float((stats.norm.sf(c - shift) + stats.norm.cdf(-c - shift)).mean())


def worst(n1: int, n2: int, alpha: float, k: int) -> tuple[float, float]:
    """The largest rejection rate over θ (and where) of the verdict's two-part test at Welch's level alpha."""
    return max((rate(n1, n2, alpha, k, th), th) for th in THETAS)


def power_row(n1: int, n2: int, k: int, alpha: float) -> str:
    """Power at equal spreads per unit (θ = n2/(n1 + n2)), the change 3 standard errors: Satterthwaite's df at
    5%, at α′, and Hsu's df at 5% (with its own worst case)."""
    th = n2 / (n1 + n2)
    sat, cor, hsu = (
        rate(n1, n2, a, k, th, hsu=h, shift=3.0) for a, h in ((0.05, False), (alpha, False), (0.05, True))
    )
    hsu_worst = max(rate(n1, n2, 0.05, k, t, hsu=True) for t in THETAS)
    return (
        f"| {n1} vs {n2} | {100 * sat:.1f}% | {100 * cor:.1f}% | {100 * hsu:.1f}% ({100 * hsu_worst:.2f}%) |"
    )


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
    ap.add_argument(
        "--power", nargs="*", default=None, help="pairs like 2x6: power at equal spreads, 3 standard errors"
    )
    args = ap.parse_args()
    if args.power is not None:
        print("| units | Satterthwaite at 5% | at α′ | Hsu's df at 5% (its worst A/A) |")
        print("|---|---|---|---|")
        for pair in args.power:
            n1, n2 = map(int, pair.split("x"))
            print(power_row(n1, n2, args.k, calibrate(n1, n2, args.k)), flush=True)
        return
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
