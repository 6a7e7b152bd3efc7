"""Boots as the unit when the two sides' boots vary by different amounts: false positives of the verdict's test
(stats.levels.unit_test: Welch's t on the boot means and the nested model, both must reject) against its two
parts alone, computed with scipy on the same boot means — Welch's t (`ttest_ind(equal_var=False)`) and the pooled
t (`equal_var=True`, the nested model's σ_unit pooled over both sides, exact with equal trials per boot).

Null data on the log scale: every boot adds its own offset (σ_unit per side, below) and every trial its own noise
(σ_trial), both sides the same kernel. With equal trials per boot the nested model per side (each side's own
σ_unit) is Welch's t on the boot means, so Welch's column is also what that model would give.
Run: `.venv/bin/python bench/boots_unequal.py [--sims N] [--seed S]`."""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from fairmark.stats.levels import levels, unit_test

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


def side(rng: np.random.Generator, k: int, m: int, su: float, st: float, tag: str) -> tuple[list, list]:
    values, units = [], []
    for i in range(k):
        values += list(np.exp(1.0 + rng.normal(0.0, su) + rng.normal(0.0, st, m)))
        units += [f"{tag}{i}"] * m
    return values, units


def rates(case: tuple, sims: int, seed: int) -> dict[str, int]:
    _, ka, kb, ma, mb, sa, sb, st = case
    rng = np.random.default_rng(seed)
    hits = {"unit_test": 0, "welch": 0, "pooled": 0}
    for _ in range(sims):
        (a, ua), (b, ub) = side(rng, ka, ma, sa, st, "a"), side(rng, kb, mb, sb, st, "b")
        lv = levels(np.array(a), ua, np.array(b), ub, "boot")
        test = unit_test(lv, confidence=95.0)
        hits["unit_test"] += bool(test and test.significant)
        xa = np.array([np.log(g).mean() for g in lv.groups_baseline])
        xb = np.array([np.log(g).mean() for g in lv.groups_other])
        hits["welch"] += bool(stats.ttest_ind(xa, xb, equal_var=False).pvalue <= 0.05)
        hits["pooled"] += bool(stats.ttest_ind(xa, xb, equal_var=True).pvalue <= 0.05)
    return hits


def ci(k: int, n: int) -> str:
    lo, hi = stats.binomtest(k, n).proportion_ci(0.95)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(
        "| case | the verdict (unit_test) | Welch's t on the boot means (scipy) | pooled t on the boot means (scipy) |"
    )
    print("|---|---|---|---|")
    for i, case in enumerate(CASES):
        h = rates(case, args.sims, args.seed * 100 + i)
        print(
            f"| {case[0]} | {ci(h['unit_test'], args.sims)} | {ci(h['welch'], args.sims)} | "
            f"{ci(h['pooled'], args.sims)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
