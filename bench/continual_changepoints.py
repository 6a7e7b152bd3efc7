"""Change-point detection for `fairmark history`: false alarms on noise-only series and detection of a step, for
fairmark's e-divisive (stats/changepoints.py) and, on the same series, MongoDB's signal-processing-algorithms
(e-divisive, permutation test), Apache Otava (e-divisive windows + Student t merge) and ruptures (PELT, a
penalty instead of a significance level).

The series (identical for every method: numpy's PCG64 with fixed seeds): N noise-only series of 20 points
(normal, sd 3% of the mean; and lognormal, same spread, skewed), and S series of 22 points with a +10% step at
point 12 (index 11), noise sd 3%. Printed per method and level: false alarms k/N with the exact binomial 95% CI,
the share of step series with exactly one change point within ±1 of index 11, CPU time per series.

The other libraries pin numpy/scipy versions fairmark cannot share, so they run from their own virtualenvs:

    .venv/bin/python bench/continual_changepoints.py                           # fairmark (α 0.01, 0.05)
    python3 -m venv /tmp/spa && /tmp/spa/bin/pip install signal-processing-algorithms scipy
    /tmp/spa/bin/python bench/continual_changepoints.py --method spa           # likewise ruptures, otava
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # fairmark's own, for any interpreter

Detector = Callable[[np.ndarray, float, int], list[int]]


def fairmark_detector(x: np.ndarray, alpha: float, seed: int) -> list[int]:
    from fairmark.stats.changepoints import e_divisive

    return [c.index for c in e_divisive(x, alpha=alpha, permutations=199, seed=seed)]


def spa_detector(x: np.ndarray, alpha: float, seed: int) -> list[int]:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    np.random.seed(seed)  # it permutes with numpy's global generator
    return sorted(int(i) for i in e_divisive(x, pvalue=alpha, permutations=100))


def otava_detector(x: np.ndarray, alpha: float, seed: int) -> list[int]:
    from otava.analysis import compute_change_points

    cps, _ = compute_change_points(list(map(float, x)), window_len=50, max_pvalue=alpha)
    return sorted(int(c.index) for c in cps)


def ruptures_detector(x: np.ndarray, alpha: float, seed: int) -> list[int]:
    """PELT on the mean (l2) with a BIC-like penalty 2·σ²·ln n, σ from the MAD of first differences: ruptures
    has no significance level, so `alpha` is not used — the false-alarm rate is whatever this penalty gives."""
    import ruptures as rpt

    sigma = 1.4826 * np.median(np.abs(np.diff(x) - np.median(np.diff(x)))) / np.sqrt(2)
    bkps = rpt.Pelt(model="l2", min_size=3, jump=1).fit(x).predict(pen=2 * sigma**2 * np.log(len(x)))
    return [int(b) for b in bkps[:-1]]  # the last breakpoint is the series' end


METHODS: dict[str, tuple[Detector, tuple[float, ...]]] = {
    "fairmark": (fairmark_detector, (0.01, 0.05)),
    "spa": (spa_detector, (0.01, 0.05)),
    "otava": (otava_detector, (0.01, 0.05)),
    "ruptures": (ruptures_detector, (0.0,)),
}


def noise(i: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(10_000 + i)
    if kind == "normal":
        return rng.normal(100.0, 3.0, 20)
    return 100.0 * np.exp(rng.normal(0.0, 0.03, 20)) * np.exp(rng.exponential(0.03, 20) - 0.03)


def step(i: int) -> np.ndarray:
    rng = np.random.default_rng(20_000 + i)
    return np.r_[rng.normal(100.0, 3.0, 11), rng.normal(110.0, 3.0, 11)]


def binom_ci(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return 100 * ci.low, 100 * ci.high


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=sorted(METHODS), default="fairmark")
    ap.add_argument("--noise", type=int, default=1000, help="noise-only series per kind")
    ap.add_argument("--steps", type=int, default=200, help="series with a step")
    args = ap.parse_args()
    detect, levels = METHODS[args.method]
    for level in levels:
        at = f"α = {level:g}" if level else "BIC penalty"
        for kind in ("normal", "lognormal"):
            t = time.process_time()
            k = sum(bool(detect(noise(i, kind), level, i)) for i in range(args.noise))
            per = (time.process_time() - t) / args.noise
            lo, hi = binom_ci(k, args.noise)
            print(
                f"{args.method} {at}: false alarms on {args.noise} noise-only series ({kind}, n = 20): {k} = "
                f"{100 * k / args.noise:.1f}% [{lo:.1f}, {hi:.1f}]; {1000 * per:.1f} ms CPU per series"
            )
        found = [detect(step(i), level, i) for i in range(args.steps)]
        hit = sum(len(f) == 1 and abs(f[0] - 11) <= 1 for f in found)
        lo, hi = binom_ci(hit, args.steps)
        print(
            f"{args.method} {at}: +10% step at point 12 of 22 (noise sd 3%): found alone within ±1 in {hit} of "
            f"{args.steps} = {100 * hit / args.steps:.1f}% [{lo:.1f}, {hi:.1f}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
