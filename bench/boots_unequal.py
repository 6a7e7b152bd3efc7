"""Boots as the unit when the two sides' boots vary by different amounts: false positives of the verdict's test
(stats.levels.unit_test: Welch's t on the boot means and the nested model, both must reject) against its two
parts alone, computed on the same boot means — Welch's t (scipy's `ttest_ind(equal_var=False)` formulas) and the
pooled t (`equal_var=True`, the nested model's σ_unit pooled over both sides, exact with equal trials per boot).

Null data on the log scale: every boot adds its own offset (σ_unit per side, below) and every trial its own noise
(σ_trial), both sides the same kernel. With equal trials per boot the nested model per side (each side's own
σ_unit) is Welch's t on the boot means, so Welch's column is also what that model would give.

Power rows ("power"): the same data with side B's kernel slower by 3 standard errors of the true difference of
the sides' mean log boot means (the change each row prints), so every row sits where power is neither 0 nor 1.
Run: `.venv/bin/python bench/boots_unequal.py [--sims N] [--seed S] [--kind aa|power|both] [--only TEXT]
[--confidence 90|95|99]` (the t tests alone at the level 1 − confidence/100)."""

from __future__ import annotations

import argparse

import numpy as np
from scipy import special, stats

from fairmark.stats.levels import Levels, group, unit_test

# (name, boots A, boots B, trials per boot A, B, σ_unit A, B, σ_trial)
CASES = (
    ("2 vs 6, A's boots vary 10x", 2, 6, 8, 8, 0.05, 0.005, 0.01),
    ("6 vs 2, B's boots vary 10x", 6, 2, 8, 8, 0.005, 0.05, 0.01),
    ("2 vs 2, A's boots vary 10x", 2, 2, 8, 8, 0.05, 0.005, 0.01),
    ("3 vs 3, A's boots vary 3x", 3, 3, 8, 8, 0.03, 0.01, 0.01),
    ("3 vs 8, A's boots vary 5x", 3, 8, 8, 8, 0.05, 0.01, 0.01),
    ("2 (2 trials) vs 6 (40 trials), A's boots vary 10x", 2, 6, 2, 40, 0.05, 0.005, 0.02),
    ("2 vs 6, equal spreads", 2, 6, 8, 8, 0.02, 0.02, 0.01),
    ("2 vs 2, equal spreads", 2, 2, 8, 8, 0.02, 0.02, 0.01),
)


EFFECT_SE = 3.0  # the power rows' change, in standard errors of the true difference


def side(
    rng: np.random.Generator, k: int, m: int, su: float, st: float, tag: str, shift: float = 0.0
) -> tuple[list, list]:
    values, units = [], []
    for i in range(k):
        values += list(np.exp(1.0 + shift + rng.normal(0.0, su) + rng.normal(0.0, st, m)))
        units += [f"{tag}{i}"] * m
    return values, units


def shift_of(case: tuple) -> float:
    """The power rows' change on the log scale: EFFECT_SE true standard errors of the difference."""
    _, ka, kb, ma, mb, sa, sb, st = case
    return EFFECT_SE * float(np.sqrt((sa**2 + st**2 / ma) / ka + (sb**2 + st**2 / mb) / kb))


def rates(case: tuple, sims: int, seed: int, shift: float = 0.0, confidence: float = 95.0) -> dict[str, int]:
    _, ka, kb, ma, mb, sa, sb, st = case
    alpha = 1 - confidence / 100
    rng = np.random.default_rng(seed)
    hits = {"unit_test": 0, "welch": 0, "pooled": 0}
    for _ in range(sims):
        (a, ua), (b, ub) = side(rng, ka, ma, sa, st, "a"), side(rng, kb, mb, sb, st, "b", shift)
        lv = unit_levels(a, ua, b, ub)
        test = unit_test(lv, confidence=confidence)
        hits["unit_test"] += bool(test and test.significant)
        xa = np.array([np.log(g).mean() for g in lv.groups_baseline])
        xb = np.array([np.log(g).mean() for g in lv.groups_other])
        hits["welch"] += bool(t_p(xa, xb, pooled=False) <= alpha)
        hits["pooled"] += bool(t_p(xa, xb, pooled=True) <= alpha)
    return hits


def unit_levels(a: list, ua: list, b: list, ub: list, unit: str = "boot") -> Levels:
    """What unit_test reads of stats.levels.levels (the unit means and the values per unit), without each side's
    variance split and its F interval, which only the sentence uses (they took 55% of this bench's CPU)."""
    ga, gb = group(np.array(a), ua), group(np.array(b), ub)
    ma, mb = (tuple(float(g.mean()) for g in gs) for gs in (ga, gb))
    per = (len(a) + len(b)) / (len(ga) + len(gb))
    return Levels(
        unit,
        len(ga),
        len(gb),
        len(a) + len(b),
        ma,
        mb,
        per,
        groups_baseline=tuple(ga),
        groups_other=tuple(gb),
    )


def t_p(xa: np.ndarray, xb: np.ndarray, *, pooled: bool) -> float:
    """scipy's ttest_ind(equal_var=not pooled) p, its formulas without its wrapper (a third of the CPU)."""
    na, nb, va, vb = xa.size, xb.size, xa.var(ddof=1), xb.var(ddof=1)
    if pooled:
        df = na + nb - 2.0
        se2 = ((na - 1) * va + (nb - 1) * vb) / df * (1 / na + 1 / nb)
    else:
        se2 = va / na + vb / nb
        df = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return float(2 * special.stdtr(df, -abs(xa.mean() - xb.mean()) / np.sqrt(se2)))


def ci(k: int, n: int) -> str:
    lo, hi = stats.binomtest(k, n).proportion_ci(0.95)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kind", choices=("aa", "power", "both"), default="aa")
    ap.add_argument("--only", default="", help="only the cases whose name holds this text")
    ap.add_argument(
        "--confidence", type=float, default=95.0, help="the verdict's; the t tests' level its rest"
    )
    args = ap.parse_args()
    print(
        "| case | kind | the verdict (unit_test) | Welch's t on the boot means (scipy) "
        "| pooled t on the boot means (scipy) |"
    )
    print("|---|---|---|---|---|")
    kinds = ("aa", "power") if args.kind == "both" else (args.kind,)
    for i, case in enumerate(CASES):
        if args.only not in case[0]:
            continue
        for kind in kinds:
            shift = shift_of(case) if kind == "power" else 0.0
            # the A/A rows keep the seeds they had; the power rows draw their own
            h = rates(case, args.sims, args.seed * 100 + i + (50 if shift else 0), shift, args.confidence)
            label = f"power at {100 * np.expm1(shift):+.1f}%" if shift else "A/A"
            print(
                f"| {case[0]} | {label} | {ci(h['unit_test'], args.sims)} | {ci(h['welch'], args.sims)} | "
                f"{ci(h['pooled'], args.sims)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
