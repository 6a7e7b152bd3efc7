"""Boots as a level (issue 14): false positives and power of the verdict with the boot as the unit, against the
verdict that pools the trials of all boots (`compare-runs` before issue 14), on the same simulated data.

Null: every boot adds its own offset (σ 3% of the mean) and every trial its own noise (σ 0.5%), both sides the
same kernel. Power: side B's kernel is 5% slower. 1000 simulations each of 1 vs 1, 2 vs 2 and 4 vs 4 boots,
10 trials per boot, 95% confidence. Run: `.venv/bin/python bench/boots_simulation.py [--sims N]`."""

from __future__ import annotations

import argparse
import json

import numpy as np
from scipy.stats import binomtest

from boots_unequal import unit_levels  # run from bench/ (sys.path[0])
from fairmark.stats.levels import unit_test
from fairmark.verdict.judge import Pair, judge

BOOT_SD, TRIAL_SD, TRIALS, EFFECT = 0.03, 0.005, 10, 1.05


def side(rng: np.random.Generator, boots: int, factor: float, tag: str) -> tuple[list[float], list[str]]:
    values, units = [], []
    for b in range(boots):
        offset = rng.normal(0.0, BOOT_SD)
        values += list(100.0 * factor * (1 + offset) * (1 + rng.normal(0.0, TRIAL_SD, TRIALS)))
        units += [f"{tag}{b}"] * TRIALS
    return values, units


def rates(boots: int, factor: float, sims: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    new = old = 0
    for _ in range(sims):
        (a, ua), (b, ub) = side(rng, boots, 1.0, "a"), side(rng, boots, factor, "b")
        level_aware, pooled = judge([Pair(a, b, units=(ua, ub)), Pair(a, b)])
        new += level_aware.significant
        old += pooled.significant
    return {"boots_as_unit": new, "pooled_trials": old}


def rule_only(boots: int, sims: int, seed: int) -> int:
    """False positives of the unit-level decision alone (stats.levels.unit_test: the same test the judge's
    level path decides with), cheap enough for many more simulations than the whole judge."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        (a, ua), (b, ub) = side(rng, boots, 1.0, "a"), side(rng, boots, 1.0, "b")
        test = unit_test(unit_levels(a, ua, b, ub), confidence=95.0)
        hits += bool(test and test.significant)
    return hits


def ci(k: int, n: int) -> str:
    lo, hi = binomtest(k, n).proportion_ci(0.95)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {}
    for boots in (1, 2, 4):
        null = rates(boots, 1.0, args.sims, seed=boots)
        power = rates(boots, EFFECT, args.sims, seed=100 + boots)
        out[f"{boots}v{boots}"] = {"null": null, "effect_5pct": power}
        if not args.json:
            print(
                f"{boots} vs {boots} boots ({TRIALS} trials each, boot sd 3%, trial sd 0.5%, {args.sims} sims):"
            )
            print(
                f"  false positives: boots as the unit {ci(null['boots_as_unit'], args.sims)}; "
                f"trials pooled (old compare-runs) {ci(null['pooled_trials'], args.sims)}"
            )
            print(
                f"  power at a true 5% effect: boots as the unit {ci(power['boots_as_unit'], args.sims)}; "
                f"trials pooled {ci(power['pooled_trials'], args.sims)}"
            )
    for boots in (2, 4):
        k = rule_only(boots, 20 * args.sims, seed=1000 + boots)
        out[f"{boots}v{boots}"]["null_rule_only"] = {"sims": 20 * args.sims, "false_positives": k}
        if not args.json:
            print(
                f"{boots} vs {boots} boots, the unit-level decision alone, {20 * args.sims} sims: "
                f"false positives {ci(k, 20 * args.sims)}"
            )
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
