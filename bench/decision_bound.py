"""How few trials can any boundaries on the paired t give? The floor under issue 36's two trial goals.

`stop = "decision"` (stats.sequential) tests the paired log ratios of a run's rounds with a t statistic whose
variance has n − 1 df at a look of n pairs. Its boundaries come from a spending function; this script drops that
restriction and searches the boundaries themselves — one nominal level per look, any shape — on simulated normal
paths, for the design of each goal:

* difference: a 3% change, trial CV 1.5% (paired sd of the log ratio √2·1.5%), looks at every round from
  `first` to 20; least mean trials per side with power ≥ 95% and the chance of any false claim over all looks
  ≤ 5% (the full α: the code spends 4.5%, its margin for the interval's coverage);
* equivalence: A/A at trial CV 1.5%, looks up to 30, the difference boundaries the code uses; least mean trials
  per side to a stop, each equivalence look a one-sided t boundary, the chance of claiming equivalence at a
  change of exactly ±2% at most 5% (two one-sided tests at 5%, as the code).

The search is a coordinate descent on log levels from several starts (the code's own levels among them) on one
set of paths; the best, its levels scaled by one factor so that its false-claim rate is 5% on fresh paths, is
evaluated on those fresh paths (the figures printed). It is a search, not a proof of optimality; with a known
variance (a z test) the same search shows what the estimated variance costs, and an unpaired variance (twice the
df) what it would gain and why the code does not use it: trials of a round that are negatively correlated (an
order effect) make that variance too small, and its false-claim rate rises.

Run: .venv/bin/python bench/decision_bound.py [--paths N]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import time
from collections.abc import Callable

import numpy as np
from scipy import special

from fairmark.stats.sequential import Design, t_levels

SD_D = math.sqrt(2.0) * 0.015  # the paired log ratio's sd at trial CV 1.5%
EFFECT = math.log(1.03) / SD_D  # the 3% change in those units
MARGIN = math.log(1.02) / SD_D  # ±2% in those units
ALPHA, POWER = 0.05, 0.95
STEPS = (0.0, 0.5, 0.7, 0.85, 1.15, 1.4, 2.0)  # multiplicative moves of one look's level (0: no test there)


def t_paths(rng: np.random.Generator, paths: int, n_max: int, mean: float, known: bool = False):
    """Signed t statistics (paths × n_max, column n−1 the look at n pairs) and the running means and sds."""
    d = rng.standard_normal((paths, n_max)) + mean
    n = np.arange(1, n_max + 1)
    m = np.cumsum(d, 1) / n
    var = (np.cumsum(d * d, 1) - n * m * m) / np.maximum(n - 1, 1)
    sd = np.ones_like(m) if known else np.sqrt(np.maximum(var, 1e-300))
    return m / (sd / np.sqrt(n)), m, sd


def trials(n: np.ndarray) -> str:
    """The mean trials per side and its Monte Carlo standard error."""
    return f"{n.mean():.2f} (± {n.std() / math.sqrt(n.size):.3f})"


def first_cross(hit: np.ndarray, looks: np.ndarray, last: int) -> tuple[np.ndarray, np.ndarray]:
    """Per path: whether any look crossed, and the look it stopped at (the last look if none did)."""
    any_ = hit.any(1)
    return any_, np.where(any_, looks[hit.argmax(1)], last)


def crit(levels: np.ndarray, looks: np.ndarray, known: bool, two_sided: bool = True) -> np.ndarray:
    p = np.asarray(levels) / (2.0 if two_sided else 1.0)
    with np.errstate(divide="ignore"):
        if known:
            return np.where(p > 0, -special.ndtri(np.maximum(p, 1e-300)), np.inf)
        return np.where(p > 0, special.stdtrit(looks - 1.0, 1.0 - np.maximum(p, 1e-300)), np.inf)


def difference_eval(levels, looks, t0, t1, known=False) -> tuple[float, float, np.ndarray]:
    """(α over all looks, power, mean trials per side under the change)."""
    c = crit(levels, looks, known)
    a0, _ = first_cross(np.abs(t0[:, looks - 1]) > c, looks, looks[-1])
    a1, n1 = first_cross(np.abs(t1[:, looks - 1]) > c, looks, looks[-1])
    return float(a0.mean()), float(a1.mean()), n1


def scaled(levels: np.ndarray, rate: Callable[[np.ndarray], float], alpha: float = ALPHA) -> np.ndarray:
    """The levels times one common factor such that `rate` (a false-claim rate on fresh paths) is ALPHA: the
    search's paths are few enough that its best overfits them (bisection on the log of the factor)."""
    lo, hi = -3.0, 3.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rate(np.minimum(levels * math.exp(mid), 0.5)) <= alpha else (lo, mid)
    return np.minimum(levels * math.exp(lo), 0.5)


def descend(objective: Callable[[np.ndarray], float], start: np.ndarray, rounds: int = 6) -> np.ndarray:
    """Coordinate descent: each look's level moved by STEPS while the objective falls."""
    best, value = start.copy(), objective(start)
    for _ in range(rounds):
        moved = False
        for i in range(best.size):
            for f in STEPS:
                trial = best.copy()
                trial[i] = min(0.5, trial[i] * f if trial[i] > 0 or f == 0 else 1e-3)
                v = objective(trial)
                if v < value - 1e-9:
                    best, value, moved = trial, v, True
        if not moved:
            break
    return best


def difference_floor(
    paths: int, first: int, known: bool, seed: int, alpha: float = ALPHA
) -> tuple[float, float, np.ndarray]:
    """The least mean trials found (false claims ≤ alpha, power ≥ 95%), evaluated on fresh paths."""
    rng = np.random.default_rng(seed)
    looks = np.arange(first, 21)
    t0, _, _ = t_paths(rng, paths, 20, 0.0, known)
    t1, _, _ = t_paths(rng, paths, 20, EFFECT, known)

    def objective(lv: np.ndarray) -> float:
        a, pw, n = difference_eval(lv, looks, t0, t1, known)
        return float(n.mean()) + 100.0 * max(0.0, a - alpha) + 100.0 * max(0.0, POWER - pw)

    code = np.array(t_levels(tuple(int(k) for k in looks), ALPHA))
    # and the code's levels from look 5 on, none before: an earlier first look may only add to that design
    from5 = np.zeros(looks.size)
    from5[looks >= 5] = t_levels(tuple(range(5, 21)), ALPHA)
    starts = [code, from5, np.full(looks.size, 0.01), 0.03 * 0.75 ** (looks - first)]
    found = min((descend(objective, s) for s in starts), key=objective)
    f0, _, _ = t_paths(rng, 4 * paths, 20, 0.0, known)
    f1, _, _ = t_paths(rng, 4 * paths, 20, EFFECT, known)
    found = scaled(found, lambda lv: difference_eval(lv, looks, f0, f0[:1], known)[0], alpha)
    return difference_eval(found, looks, f0, f1, known)


def code_difference(paths: int, first: int, seed: int) -> tuple[float, float, np.ndarray]:
    """The code's own levels (Design(first, 20)) on the same kind of paths."""
    rng = np.random.default_rng(seed)
    looks = np.arange(first, 21)
    lv = np.array(t_levels(tuple(int(k) for k in looks), ALPHA, Design(first, 20).spending))
    t0, _, _ = t_paths(rng, 4 * paths, 20, 0.0)
    t1, _, _ = t_paths(rng, 4 * paths, 20, EFFECT)
    return difference_eval(lv, looks, t0, t1)


def equivalence_eval(eq_lv, paths_aa, t_null, diff_c, looks) -> tuple[float, float, np.ndarray]:
    """(false equivalence at a change of exactly ±2%, share proven equivalent at A/A, mean trials at A/A)."""
    c = crit(eq_lv, looks, False, two_sided=False)
    false_eq = (-t_null[:, looks - 1] > c).any(1).mean()  # at +2%: (2% − mean)/se beyond the boundary
    t, m, sd = paths_aa
    se = sd[:, looks - 1] / np.sqrt(looks)
    mm = m[:, looks - 1]
    eq = (np.abs(mm) + c * se < MARGIN) & np.isfinite(c)
    diff = np.abs(t[:, looks - 1]) > diff_c
    stop = eq | diff
    any_, n = first_cross(stop, looks, looks[-1])
    proven = any_ & eq[np.arange(len(eq)), stop.argmax(1)] & ~diff[np.arange(len(eq)), stop.argmax(1)]
    return float(false_eq), float(proven.mean()), n


def equivalence_floor(
    paths: int, seed: int
) -> tuple[tuple[float, float, np.ndarray], tuple[float, float, np.ndarray]]:
    """(the code's equivalence levels, the best found) on fresh A/A paths, 5 to 30 trials."""
    rng = np.random.default_rng(seed)
    design = Design(5, 30)
    looks = np.arange(5, 31)
    diff_c = crit(np.array(t_levels(design.looks, ALPHA, design.spending)), looks, False)
    # the code tests at t quantile 1 − level/2 of its two-sided level at 2α: a one-sided tail of level/2
    code = np.array([design.level(int(k), 2 * ALPHA, design.eq_spending, eq=True) for k in looks]) / 2

    def sample(k: int):
        return t_paths(rng, k, 30, 0.0)[0], t_paths(rng, k, 30, 0.0)

    t_null, aa = sample(paths)

    def objective(lv: np.ndarray) -> float:
        fe, _, n = equivalence_eval(lv, aa, t_null, diff_c, looks)
        return float(n.mean()) + 100.0 * max(0.0, fe - ALPHA)

    starts = [code, np.where(looks >= 8, 0.05, 0.0), np.where(looks >= 7, 0.08 * 0.8 ** (looks - 7), 0.0)]
    found = min((descend(objective, s) for s in starts), key=objective)
    f_null, f_aa = sample(4 * paths)
    found = scaled(found, lambda lv: equivalence_eval(lv, f_aa, f_null, diff_c, looks)[0])
    return equivalence_eval(code, f_aa, f_null, diff_c, looks), equivalence_eval(
        found, f_aa, f_null, diff_c, looks
    )


def unpaired(paths: int, seed: int, rho: float) -> tuple[float, np.ndarray]:
    """An unpaired variance (the larger of Welch's and the paired one, with its df), levels calibrated as the code
    calibrates its own (γ 2 less the margin) on independent trials: (A/A false claims over looks 6 to 30 with
    trials of a round correlated `rho`, mean trials per side at the 3% change over looks 5 to 20)."""
    rng = np.random.default_rng(seed)

    def pvals(n_max: int, looks: np.ndarray, mean: float, r: float) -> np.ndarray:
        z1, z2 = rng.standard_normal((2, paths, n_max))
        a, b = z1, r * z1 + math.sqrt(1 - r * r) * z2 + mean * math.sqrt(2.0)  # the change in d's sd units
        out = []
        for n in looks:
            x, y = a[:, :n], b[:, :n]
            d = y - x
            vd, va, vb = d.var(1, ddof=1), x.var(1, ddof=1), y.var(1, ddof=1)
            use = va + vb > vd
            v = np.where(use, va + vb, vd)
            df = np.where(use, (va + vb) ** 2 / ((va**2 + vb**2) / (n - 1)), n - 1.0)
            out.append(2 * special.stdtr(df, -np.abs(d.mean(1)) / np.sqrt(v / n)))
        return np.array(out).T

    def levels(looks: np.ndarray) -> np.ndarray:
        from fairmark.stats.sequential import spent

        p = pvals(int(looks[-1]), looks, 0.0, 0.0)
        alive, out, prev = np.ones(paths, dtype=bool), [], 0.0
        for k, n in enumerate(looks):
            target = spent(n / looks[-1], ALPHA, Design(5, 20).spending) - prev
            cnt = round(target * paths)
            srt = np.sort(p[alive, k])
            lv = 0.5 * (srt[cnt - 1] + srt[cnt]) if cnt > 0 else 0.0
            out.append(lv)
            alive &= ~(p[:, k] < lv)
            prev += target
        return np.array(out)

    aa_looks, pw_looks = np.arange(6, 31), np.arange(5, 21)
    aa_hit, _ = first_cross(pvals(30, aa_looks, 0.0, rho) < levels(aa_looks), aa_looks, 30)
    _, n1 = first_cross(pvals(20, pw_looks, EFFECT, 0.0) < levels(pw_looks), pw_looks, 20)
    return float(aa_hit.mean()), n1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paths", type=int, default=50_000, help="paths of the search (4× as many to evaluate)")
    ap.add_argument("--seed", type=int, default=36)
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(__file__) or ".",
    ).stdout.strip()
    start, load0 = time.monotonic(), os.getloadavg()[0]
    n, s = args.paths, args.seed
    print(f"difference: 3% change, CV 1.5%, looks to 20; {4 * n} evaluation paths a row")
    print("| boundaries | first look | α over all looks | power | mean trials per side |")
    print("|---|---|---|---|---|")
    a, pw, tr = code_difference(n, 5, s)
    print(f"| the code's (HSD γ 2 less the margin) | 5 | {100 * a:.2f}% | {100 * pw:.1f}% | {trials(tr)} |")
    for first in (3, 4, 5):
        a, pw, tr = difference_floor(n, first, False, s + first)
        print(f"| best found, paired t | {first} | {100 * a:.2f}% | {100 * pw:.1f}% | {trials(tr)} |")
    a, pw, tr = difference_floor(n, 5, False, s + 8, 0.045)
    print(
        f"| best found, paired t, α 4.5% as the code spends | 5 | {100 * a:.2f}% | {100 * pw:.1f}% | {trials(tr)} |"
    )
    a, pw, tr = difference_floor(n, 5, True, s + 9)
    print(f"| best found, variance known (z) | 5 | {100 * a:.2f}% | {100 * pw:.1f}% | {trials(tr)} |")
    print(f"\nequivalence within ±2%: A/A, CV 1.5%, looks 5 to 30; {4 * n} evaluation paths")
    print("| boundaries | false equivalence at ±2% | A/A proven equivalent | mean trials per side |")
    print("|---|---|---|---|")
    code, best = equivalence_floor(n, s + 20)
    for name, (fe, pr, tr) in (("the code's (from 8, HSD γ 3)", code), ("best found", best)):
        print(f"| {name} | {100 * fe:.2f}% | {100 * pr:.1f}% | {trials(tr)} |")
    print(f"\nan unpaired variance (the larger of Welch's and the paired); {n} paths a row")
    print(
        "| trials of a round correlated | A/A false claims, 6 to 30 | mean trials per side at 3%, 5 to 20 |"
    )
    print("|---|---|---|")
    for rho in (0.0, -0.2, -0.5):
        aa, tr = unpaired(n, s + 30, rho)
        print(f"| {rho:+.1f} | {100 * aa:.2f}% | {trials(tr)} |")
    print("(trials: the mean and ± its Monte Carlo standard error; a rate p of k paths: ± √(p(1 − p)/k))")
    print(
        f"\ncommit {commit}, load average {load0:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, "
        f"{time.monotonic() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
