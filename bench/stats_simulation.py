"""Does fairmark's verdict hold its stated error rates? Simulated runs through the real rule (issue 10).

Each simulated run interleaves A and B round by round (random order within a round), stops the way the runner
does (stats.stopping.group_stop: both cells together, at a length set by the first `min_trials` rounds) and is
judged the way every verdict is (stats.compare with the rounds: paired by round, Stein's first-stage spread).
"Today's rule" for contrast is the one before issue 10: each cell stopped on its own precision, pooled t.

1. A/A false positives at 95% (goal ≤ 5.5%): independent normal noise, skewed (lognormal) noise, two modes, and
   AR(1) drift shared by the interleaved cells; min_trials 6, max_trials 30, target ±1%, CV about 2%.
2. Power at a 3% effect, CV 1.5%, at most 20 trials per side (goal ≥ 90%).
3. Coverage of the headline interval (Fieller's ratio CI in the sentence) at ratios 1.0, 1.2, 2.0 (goal 94-96%).

Run: .venv/bin/python bench/stats_simulation.py [RUNS]   (default 20000 per figure: a rate of 5% is then known
to ±0.3%; docs/statistics.md quotes the output)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from fairmark.stats import t_quantile
from fairmark.stats.paired import paired_by_round
from fairmark.stats.stopping import group_stop

Noise = Callable[[np.random.Generator, int], np.ndarray]  # relative noise for a sequence of trials


def normal(cv: float) -> Noise:
    return lambda rng, n: cv * rng.standard_normal(n)


def lognormal(cv: float) -> Noise:
    mean, sd = np.exp(0.125), np.sqrt((np.exp(0.25) - 1) * np.exp(0.25))  # lognormal σ = 0.5: skewness 1.75
    return lambda rng, n: cv * (np.exp(0.5 * rng.standard_normal(n)) - mean) / sd


def bimodal(cv: float) -> Noise:
    # 30% of trials land in a second mode 4.4 within-mode stddevs up (e.g. a cache that sometimes misses)
    return lambda rng, n: cv * ((rng.random(n) < 0.3) * 2.0 - 0.6 + 0.45 * rng.standard_normal(n)) / 1.0


def ar1_shared(cv: float, phi: float = 0.9) -> Noise:
    """Drift over the trial sequence (the machine), AR(1) with φ = 0.9 and stddev 2·cv, plus trial noise cv/2."""

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        e = rng.standard_normal(n + 100) * 2 * cv * np.sqrt(1 - phi**2)
        z = np.zeros(n + 100)
        for i in range(1, n + 100):
            z[i] = phi * z[i - 1] + e[i]
        return z[100:] + 0.5 * cv * rng.standard_normal(n)

    return draw


def interleave(rng: np.random.Generator, noise: Noise, rounds: int, ratio: float) -> tuple[np.ndarray, ...]:
    """A's and B's values for `rounds` rounds, the pair in each round in random order on one trial sequence."""
    z = noise(rng, 2 * rounds)
    b_first = rng.random(rounds) < 0.5
    za = np.where(b_first, z[1::2], z[0::2])
    zb = np.where(b_first, z[0::2], z[1::2])
    return 100.0 * (1 + za), 100.0 * ratio * (1 + zb)


def final_rule(a, b, *, min_trials, max_trials, target):
    """The runner's stop (both cells together) and the verdict paired by round: stats.paired.paired_by_round is
    the function stats.compare decides with when rounds are known (called directly: compare's cross-checks and
    summaries would make the simulation minutes instead of seconds). group_stop fixes the length after the first
    stage and nothing later moves it, so it is asked once, at the end of the first stage."""
    first = group_stop(
        [a[:min_trials], b[:min_trials]],
        confidence=95,
        target_ci_pct=target,
        min_trials=min_trials,
        max_trials=max_trials,
    )
    n = first.target_n if not first.stop else min_trials
    r = range(n)
    test = paired_by_round(
        dict(zip(r, a[:n], strict=True)),
        dict(zip(r, b[:n], strict=True)),
        confidence=95,
        first_stage=min_trials,
    )
    return test.significant, (test.ratio_ci_low, test.ratio_ci_high), n


def _precise_at(x: np.ndarray, min_trials: int, max_trials: int, target: float) -> int:
    """The first n ≥ min_trials at which a cell alone reached its precision (stats.precision_reached,
    vectorised over n with the same t table), else max_trials."""
    k = np.arange(1, x.size + 1)
    mean = np.cumsum(x) / k
    var = (np.cumsum(x * x) - k * mean * mean) / np.maximum(k - 1, 1)
    t = np.array([t_quantile(95, n - 1) if n > 1 else np.inf for n in k])
    with np.errstate(invalid="ignore"):  # n = 1: no interval (∞·0)
        ok = t * np.sqrt(np.maximum(var, 0) / k) <= target / 100 * np.abs(mean)
    ok[: min_trials - 1] = False
    hits = np.flatnonzero(ok[:max_trials])
    return int(hits[0]) + 1 if hits.size else max_trials


def old_rule(a, b, *, min_trials, max_trials, target):
    """Before issue 10: each cell stops alone on its precision; pooled t (ministat's rule); the headline
    interval was 100·e/mean_A around the observed change."""
    xa, xb = (x[: _precise_at(x, min_trials, max_trials, target)] for x in (a, b))
    df = xa.size + xb.size - 2
    sp = np.sqrt(((xa.size - 1) * xa.var(ddof=1) + (xb.size - 1) * xb.var(ddof=1)) / df)
    e = t_quantile(95, df) * sp * np.sqrt(1 / xa.size + 1 / xb.size)
    d = xb.mean() - xa.mean()
    return bool(abs(d) > e), (1 + (d - e) / xa.mean(), 1 + (d + e) / xa.mean()), max(xa.size, xb.size)


def simulate(noise, runs, *, ratio=1.0, rule=final_rule, seed=1, min_trials=6, max_trials=30, target=1.0):
    rng = np.random.default_rng(seed)
    hits = covered = 0
    trials = []
    for _ in range(runs):
        a, b = interleave(rng, noise, max_trials, ratio)
        significant, (low, high), n = rule(a, b, min_trials=min_trials, max_trials=max_trials, target=target)
        hits += significant
        covered += low <= ratio <= high
        trials.append(n)
    return hits / runs, covered / runs, float(np.mean(trials))


def wilson(k: float, n: int) -> str:
    """95% Wilson interval of a simulated rate, so the reader sees the simulation's own error."""
    z = 1.96
    p = k
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"[{100 * (centre - half):.1f}, {100 * (centre + half):.1f}]"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    start = time.monotonic()
    print(f"A/A false positives at 95% ({runs} simulated runs each; min_trials 6, max_trials 30, target ±1%)")
    print(f"  {'noise':<34} {'final rule':>12} {'95% CI':>13} {'mean n':>7}   {'today':>7} {'mean n':>7}")
    for name, noise in (
        ("independent normal, CV 2%", normal(0.02)),
        ("lognormal (skew 1.75), CV 2%", lognormal(0.02)),
        ("two modes (30% at +4.4 sd), CV 2%", bimodal(0.02)),
        ("AR(1) φ 0.9 drift shared, sd 4%", ar1_shared(0.02)),
    ):
        fp, _, n = simulate(noise, runs)
        old_fp, _, old_n = simulate(noise, runs, rule=old_rule)
        print(
            f"  {name:<34} {100 * fp:>11.2f}% {wilson(fp, runs):>13} {n:>7.1f}   {100 * old_fp:>6.2f}% "
            f"{old_n:>7.1f}"
        )
    power, _, n = simulate(normal(0.015), runs, ratio=1.03, max_trials=20, seed=2)
    print(
        f"power at a 3% effect, CV 1.5%, ≤ 20 trials per side: {100 * power:.1f}% {wilson(power, runs)}, "
        f"mean n {n:.1f}"
    )
    print("coverage of the headline interval (95%), CV 2%, adaptive stopping (today: 100·e/mean_A):")
    for k, ratio in enumerate((1.0, 1.2, 2.0)):
        _, cov, _ = simulate(normal(0.02), runs, ratio=ratio, seed=3 + k)
        _, old_cov, _ = simulate(normal(0.02), runs, ratio=ratio, seed=3 + k, rule=old_rule)
        print(f"  ratio {ratio:.1f}: {100 * cov:.1f}% {wilson(cov, runs)}   today {100 * old_cov:.1f}%")
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
