"""Welch's t on unit means (boots, runs, hosts) with 2 to 5 units on a side: the level it keeps, computed (not
sampled) by quadrature over both sides' sample variances, and the corrected level α′ that keeps 5% in the worst
case — the tables stats/small_alpha.json holds (stats.levels.small_alpha).

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

At another confidence (`--confidence 90`, `99`) the nominal level is 1 − confidence/100 and the nested model's
part tests at that confidence too. `--grid` prints the tables stats/small_alpha.json holds: α′ for every count of
the larger side from the smaller one's up to 12, then 14, 16, 20, 25, 30, 40, 60, 100 (where α′ only rises with
it, so the smaller of two neighbours is below the level between them), at 80, 90, 95, 98, 99 and 99.5% confidence.

Run: `.venv/bin/python bench/welch_small_units.py [--k 300]` (about 15 s of CPU a pair; 2 s at K 120)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

THETAS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.985, 0.99, 0.9925, 0.995, 0.9975, 0.999, 0.9995)
SMALL = (2, 3, 4, 5)
LARGE = (2, 3, 4, 5, 6, 8, 12, 20, 40, 100)
GRID = (*range(2, 13), 14, 16, 20, 25, 30, 40, 60, 100)
LEVELS = (95.0, 90.0, 99.0, 80.0, 98.0, 99.5)


def rate(
    n1: int,
    n2: int,
    alpha: float,
    k: int,
    th: float,
    *,
    hsu: bool = False,
    shift: float = 0.0,
    confidence: float = 95.0,
) -> float:
    """The rejection rate of the verdict's two-part test with Welch's part at level alpha (on Satterthwaite's df,
    or Hsu's min(n1, n2) − 1) and the nested part at `confidence`, θ as above, the true difference `shift`
    standard errors."""
    u = (np.arange(k) + 0.5) / k
    q1, q2 = np.meshgrid(*(stats.chi2.ppf(u, n - 1) / (n - 1) for n in (n1, n2)), indexing="ij")
    v1, v2 = th * q1, (1 - th) * q2
    df = min(n1, n2) - 1.0 if hsu else (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    c = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(v1 + v2)
    sp2 = ((n1 - 1) * n1 * th * q1 + (n2 - 1) * n2 * (1 - th) * q2) / (n1 + n2 - 2)
    c = np.maximum(
        c, stats.t.ppf(1 - (1 - confidence / 100) / 2, n1 + n2 - 2) * np.sqrt(sp2 * (1 / n1 + 1 / n2))
    )
    return float((stats.norm.sf(c - shift) + stats.norm.cdf(-c - shift)).mean())


def worst(n1: int, n2: int, alpha: float, k: int, confidence: float = 95.0) -> tuple[float, float]:
    """The largest rejection rate over θ (and where) of the verdict's two-part test at Welch's level alpha."""
    return max((rate(n1, n2, alpha, k, th, confidence=confidence), th) for th in THETAS)


def power_row(n1: int, n2: int, k: int, alpha: float, confidence: float = 95.0) -> str:
    """Power at equal spreads per unit (θ = n2/(n1 + n2)), the change 3 standard errors: Satterthwaite's df at
    the nominal level, at α′, and Hsu's df at the nominal level (with its own worst case)."""
    th, nominal = n2 / (n1 + n2), 1 - confidence / 100
    sat, cor, hsu = (
        rate(n1, n2, a, k, th, hsu=h, shift=3.0, confidence=confidence)
        for a, h in ((nominal, False), (alpha, False), (nominal, True))
    )
    hsu_worst = max(rate(n1, n2, nominal, k, t, hsu=True, confidence=confidence) for t in THETAS)
    return (
        f"| {n1} vs {n2} | {100 * sat:.1f}% | {100 * cor:.1f}% | {100 * hsu:.1f}% ({100 * hsu_worst:.2f}%) |"
    )


def calibrate(n1: int, n2: int, k: int, confidence: float = 95.0) -> float:
    """The largest α′ (8 halvings of [0, nominal], rounded down) at which the worst θ keeps the nominal level.
    Each halving looks at the five θ around the worst one at the nominal level; the result is checked at every θ
    (and the halvings redone over all of them if another θ breaks it: the same α′ at a third of the cost)."""
    nominal = 1 - confidence / 100
    rate0, th0 = worst(n1, n2, nominal, k, confidence)
    if rate0 <= nominal:
        return nominal
    i = THETAS.index(th0)
    near = THETAS[max(0, i - 2) : i + 3]
    lo = _halve(n1, n2, k, confidence, near)
    if worst(n1, n2, lo, k, confidence)[0] <= nominal:
        return lo
    return _halve(n1, n2, k, confidence, THETAS)


def _halve(n1: int, n2: int, k: int, confidence: float, thetas: tuple[float, ...]) -> float:
    nominal = 1 - confidence / 100
    lo, hi = 0.0, nominal
    for _ in range(8):
        mid = (lo + hi) / 2
        top = max(rate(n1, n2, mid, k, th, confidence=confidence) for th in thetas)
        lo, hi = (mid, hi) if top <= nominal else (lo, mid)
    return lo


EDGE = (0.9996, 0.9997, 0.9998, 0.9999)  # past THETAS: at 99% the worst θ of 2 vs 2 lies near 0.9996


def refine(n1: int, n2: int, alpha: float, k: int, confidence: float) -> float:
    """α′ checked past THETAS' last θ (lowered a bisection step at a time until it keeps the level there), and 0
    where no α′ keeps it (Welch's part then takes Hsu's df, stats.levels.welch_units_df) or where Hsu's df has
    at least α′'s power at equal spreads per unit, 3 standard errors (both keep the level; the more power wins)."""
    nominal, step = 1 - confidence / 100, (1 - confidence / 100) / 256
    while alpha > 0 and max(rate(n1, n2, alpha, k, th, confidence=confidence) for th in EDGE) > nominal:
        alpha = max(0.0, alpha - step)
    th = n2 / (n1 + n2)
    if alpha > 0:
        mine = rate(n1, n2, alpha, k, th, shift=3.0, confidence=confidence)
        hsu = rate(n1, n2, nominal, k, th, hsu=True, shift=3.0, confidence=confidence)
        alpha = alpha if mine > hsu else 0.0
    return alpha


def grid(k: int, levels: list[float], tables: dict[str, list[list[float]]] | None = None) -> None:
    """The tables of stats/small_alpha.json: {confidence: [[fewer, more, α′], …]}, as JSON on stdout (`tables`:
    α′ already calibrated, to refine only)."""
    out: dict[str, list[list[float]]] = {}
    for conf in levels:
        rows = (tables or {}).get(f"{conf:g}") or [
            [ns, nl, calibrate(ns, nl, k, conf)] for ns in SMALL for nl in GRID if nl >= ns
        ]
        out[f"{conf:g}"] = [
            [int(a), int(b), round(refine(int(a), int(b), x, k, conf), 7)] for a, b, x in rows
        ]
        print(f"{conf:g}% done", file=sys.stderr, flush=True)
    print(json.dumps(out, separators=(",", ":")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=120)
    ap.add_argument("--confidence", type=float, default=95.0)
    ap.add_argument("--small", type=int, nargs="*", default=list(SMALL))
    ap.add_argument("--grid", type=float, nargs="*", default=None, help="confidences: print the JSON tables")
    ap.add_argument("--refine", default="", help="with --grid: a JSON of calibrated tables to refine only")
    ap.add_argument(
        "--power", nargs="*", default=None, help="pairs like 2x6: power at equal spreads, 3 standard errors"
    )
    args = ap.parse_args()
    conf, pct = args.confidence, f"{100 - args.confidence:g}%"
    if args.grid is not None:
        tables = json.loads(Path(args.refine).read_text()) if args.refine else None
        grid(args.k, args.grid or list(LEVELS), tables)
        return
    if args.power is not None:
        print(f"| units | Satterthwaite at {pct} | at α′ | Hsu's df at {pct} (its worst A/A) |")
        print("|---|---|---|---|")
        for pair in args.power:
            n1, n2 = map(int, pair.split("x"))
            print(power_row(n1, n2, args.k, calibrate(n1, n2, args.k, conf), conf), flush=True)
        return
    print(f"| units | Welch (Satterthwaite) ∩ pooled at {pct}: worst rate (θ) | α′ | worst rate at α′ |")
    print("|---|---|---|---|")
    for ns in args.small:
        for nl in (n for n in LARGE if n >= ns):
            rate, th = worst(ns, nl, 1 - conf / 100, args.k, conf)
            a = calibrate(ns, nl, args.k, conf)
            print(
                f"| {ns} vs {nl} | {100 * rate:.2f}% ({th:.4f}) | {100 * a:.3f}% | "
                f"{100 * worst(ns, nl, a, args.k, conf)[0]:.2f}% |",
                flush=True,
            )


if __name__ == "__main__":
    main()
