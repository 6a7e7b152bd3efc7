"""More information per look than the paired t has: the round's order, and the sums of its trials (issue 36).

bench/decision_bound.py shows that no boundaries on the paired t reach issue 36's two trial goals (≤ 7 trials per
side at 3% / CV 1.5% with ≥ 95% power; ≤ 12 to a proven A/A equivalence within ±2%): the paired variance has n − 1
df. A round of two trials holds two numbers: the difference d = b − a, which the test reads, and the sum
s = a + b. Without a round effect and without a correlation inside the round, s has the same variance as d and
its own n − 1 df; a round effect (drift shared by the cells) only adds to it, and an order effect inside the round
(the round's second trial slower) enters d alone — as a term of the round's order, estimated and removed (one
df) when the order is known. This script evaluates, on simulated log values, four rules, each with its
boundaries calibrated as the code calibrates its own (Hwang–Shih–DeCani γ 2 less the margin, on 40 000 normal
paths of that rule's own statistic; equivalence from the 8th pair, γ 3 at 2α):

* paired t, each round shuffled on its own (the runner before this change);
* paired t, rounds in twos (round 2k+1 runs round 2k's order reversed: plan.schedule.Order now);
* sums and differences: the estimate and the variance of d after its order term (n − 2 df) pooled with the
  variance of s (n − 1 df), df 2n − 3 — or Welch's df of the two sides' variances when they differ (unequal
  spreads: s and d are then correlated and the pooled variance has fewer df than it counts);
* the same, guarded: the larger of that variance and the paired one (the paired df when it is the larger);
* a switch: the pooled rule where the sums' variance is at least the differences', else the paired t, each with
  its own levels — or with one more level per look, so that the switch as a whole spends α on normal paths.

The shapes of the A/A rows are those of bench/verdict_simulation.py's decision rows that a vectorized path can
carry, plus two the order matters to: an order effect (the round's second trial slower by a multiple of the
CV) and a correlation inside the round that no order explains (a round factor favouring one side).

Run: .venv/bin/python bench/decision_order.py [--paths N]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from scipy import special

from _table import print_figures, print_provenance
from fairmark.stats.sequential import EQ_SPENDING, SPENDING, spent

ALPHA = 0.05
EFFECT, EQ_MARGIN = math.log(1.03), math.log(1.02)
SHAPES = (
    ("normal", "normal, CV 2%"),
    ("t3", "t(3)"),
    ("lognormal", "lognormal (skew 1.75)"),
    ("hiccups", "hiccups: 3% of trials +20%"),
    ("ar1", "AR(1) φ 0.9 drift shared by the cells"),
    ("unequal", "unequal CVs: A 0.5%, B 5%"),
    ("position:1", "order effect: 2nd trial of a round +1 CV"),
    ("position:3", "order effect: 2nd trial of a round +3 CV (6%)"),
    ("rho:-0.2", "correlation −0.2 inside the round, no order"),
    ("rho:-0.5", "correlation −0.5 inside the round, no order"),
)
RULES = (
    ("paired", False, "paired t, each round shuffled"),
    ("paired", True, "paired t, rounds in twos"),
    ("pooled", True, "sums and differences, rounds in twos"),
    ("guard", True, "the same, guarded by the paired variance"),
)


def orders(rng: np.random.Generator, paths: int, n: int, twos: bool) -> np.ndarray:
    """+1 where B ran second in the round, −1 where first."""
    if not twos:
        return np.where(rng.random((paths, n)) < 0.5, 1.0, -1.0)
    o = np.repeat(np.where(rng.random((paths, (n + 1) // 2)) < 0.5, 1.0, -1.0), 2, axis=1)[:, :n]
    o[:, 1::2] *= -1
    return o


def drift(rng: np.random.Generator, paths: int, n: int, o: np.ndarray, cv: float) -> tuple[np.ndarray, ...]:
    """AR(1) φ 0.9 of sd 2·cv over the trial sequence, shared by the cells, plus trial noise cv/2."""
    phi, burn = 0.9, 100
    e = rng.standard_normal((paths, 2 * n + burn)) * 2 * cv * math.sqrt(1 - phi**2)
    z = np.zeros_like(e)
    for i in range(1, e.shape[1]):
        z[:, i] = phi * z[:, i - 1] + e[:, i]
    z = z[:, burn:]
    at_a = (2 * np.arange(n) + (o < 0)).astype(int)  # A second where B ran first
    at_b = (2 * np.arange(n) + (o > 0)).astype(int)
    noise = 0.5 * cv * rng.standard_normal((2, paths, n))
    return np.take_along_axis(z, at_a, 1) + noise[0], np.take_along_axis(z, at_b, 1) + noise[1]


def paths_of(rng, paths: int, n: int, shape: str, change: float, cv: float, twos: bool):
    """(log a, log b, order) of `paths` runs of n rounds; B is `change` (a log ratio) slower."""
    o = orders(rng, paths, n, twos)
    name, _, arg = shape.partition(":")
    x = float(arg) if arg else 0.0
    z = rng.standard_normal((2, paths, n))
    if name == "t3":
        z = rng.standard_t(3, (2, paths, n)) / math.sqrt(3.0)
    elif name == "lognormal":
        z = (np.exp(0.5 * z) - np.exp(0.125)) / math.sqrt((math.exp(0.25) - 1) * math.exp(0.25))
    ea, eb = cv * z[0], cv * z[1]
    if name == "ar1":
        ea, eb = drift(rng, paths, n, o, cv)
    elif name == "unequal":
        ea, eb = 0.005 * z[0], 0.05 * z[1]
    elif name == "position":  # the round's second trial slower by x·cv
        ea, eb = ea + x * cv * (o < 0), eb + x * cv * (o > 0)
    elif name == "rho":
        eb = cv * (x * z[0] + math.sqrt(1 - x * x) * z[1])
    elif name == "hiccups":
        ea = ea + 0.2 * (rng.random((paths, n)) < 0.03)
        eb = eb + 0.2 * (rng.random((paths, n)) < 0.03)
    return ea, eb + change, o


def _fit(y: np.ndarray, o: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y = c + β·order by least squares, per path: (c, residual variance on n − 2 df, det/n² of X'X)."""
    sx, sy, sxy, syy = o.sum(1), y.sum(1), (o * y).sum(1), (y * y).sum(1)
    det = np.maximum(n * n - sx * sx, 1e-9)
    c = (n * sy - sx * sxy) / det
    beta = (n * sxy - sx * sy) / det
    return c, np.maximum(syy - c * sy - beta * sxy, 0.0) / (n - 2), det / (n * n)


def statistic(a, b, o, rule: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, standard error, df) per path at the look of n rounds."""
    a, b, o = a[:, :n], b[:, :n], o[:, :n]
    d = b - a
    paired = d.mean(1), np.sqrt(d.var(1, ddof=1) / n), np.full(d.shape[0], n - 1.0)
    if rule == "paired":
        return paired
    est, vd, share = _fit(d, o, n)
    vs = (a + b).var(1, ddof=1)
    v = ((n - 2) * vd + (n - 1) * vs) / (2 * n - 3)
    _, va, _ = _fit(a, o, n)
    _, vb, _ = _fit(b, o, n)
    welch = (va + vb) ** 2 / np.maximum((va * va + vb * vb) / (n - 2), 1e-300)
    df = np.minimum(2.0 * n - 3, np.maximum(welch, n - 2.0))
    if rule == "guard":
        df = np.where(vd > v, n - 2.0, df)
        v = np.maximum(v, vd)
    one_order = share < 1e-6  # every round in one order: no order term (paired)
    se = np.sqrt(v / (n * np.maximum(share, 1e-9)))
    return (
        np.where(one_order, paired[0], est),
        np.where(one_order, paired[1], se),
        np.where(one_order, paired[2], df),
    )


def p_values(a, b, o, rule: str, looks: np.ndarray) -> np.ndarray:
    out = []
    for n in looks:
        est, se, df = statistic(a, b, o, rule, int(n))
        out.append(2 * special.stdtr(df, -np.abs(est) / np.maximum(se, 1e-300)))
    return np.array(out).T


def calibrate(p: np.ndarray, looks: np.ndarray, alpha: float, spending: str) -> np.ndarray:
    """Each look's nominal level, so that the paths cross look k first with the spending function's share."""
    alive, levels, before = np.ones(p.shape[0], dtype=bool), [], 0.0
    for k, n in enumerate(looks):
        share = spent(n / looks[-1], alpha, spending) - before
        count = round(share * p.shape[0])
        srt = np.sort(p[alive, k])
        level = 0.5 * (srt[count - 1] + srt[count]) if count > 0 else 0.0
        levels.append(level)
        alive &= ~(p[:, k] < level)
        before += share
    return np.array(levels)


def first_cross(hit: np.ndarray, looks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    any_ = hit.any(1)
    return any_, np.where(any_, looks[hit.argmax(1)], looks[-1])


def crit(level: float, df: np.ndarray) -> np.ndarray:
    return special.stdtrit(df, 1 - level / 2) if level > 0 else np.full(df.shape, np.inf)


def equivalence(
    rng, rule: str, twos: bool, paths: int, diff_levels: np.ndarray
) -> tuple[float, float, np.ndarray]:
    """(false equivalence at exactly +2% over the looks, A/A proven equivalent, trials per side at A/A CV 1.5%)."""
    looks, eq_looks = np.arange(5, 31), np.arange(8, 31)
    null = paths_of(rng, paths, 30, "normal", 0.0, 0.015, twos)
    eq_levels = calibrate(p_values(*null, rule, eq_looks), eq_looks, 2 * ALPHA, EQ_SPENDING)
    a, b, o = paths_of(rng, paths, 30, "normal", 0.0, 0.015, twos)
    at = paths_of(rng, paths, 30, "normal", EQ_MARGIN, 0.015, twos)
    stop, proven, done, false_eq = (
        np.full(paths, 30),
        np.zeros(paths, bool),
        np.zeros(paths, bool),
        np.zeros(paths, bool),
    )
    for k, n in enumerate(looks):
        est, se, df = statistic(a, b, o, rule, int(n))
        diff = 2 * special.stdtr(df, -np.abs(est) / se) < diff_levels[k]
        eq = np.zeros(paths, dtype=bool)
        if n >= eq_looks[0]:
            level = eq_levels[n - eq_looks[0]]
            eq = (np.abs(est) + crit(level, df) * se < EQ_MARGIN) & ~diff
            e2, s2, f2 = statistic(*at, rule, int(n))
            false_eq |= np.abs(e2) + crit(level, f2) * s2 < EQ_MARGIN
        new = ~done & (diff | eq)
        stop[new], proven, done = n, proven | (new & eq), done | new
    return float(false_eq.mean()), float(proven.mean()), stop


def rule_rows(rule: str, twos: bool, name: str, paths: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    l20, l30 = np.arange(5, 21), np.arange(5, 31)
    lv20 = calibrate(
        p_values(*paths_of(rng, paths, 20, "normal", 0.0, 0.015, twos), rule, l20), l20, ALPHA, SPENDING
    )
    lv30 = calibrate(
        p_values(*paths_of(rng, paths, 30, "normal", 0.0, 0.02, twos), rule, l30), l30, ALPHA, SPENDING
    )
    hit, n = first_cross(
        p_values(*paths_of(rng, paths, 20, "normal", EFFECT, 0.015, twos), rule, l20) < lv20, l20
    )
    eq30 = calibrate(
        p_values(*paths_of(rng, paths, 30, "normal", 0.0, 0.015, twos), rule, l30), l30, ALPHA, SPENDING
    )
    fe, proven, en = equivalence(rng, rule, twos, paths, eq30)
    cells = [
        f"{100 * hit.mean():.1f}%; **{trials(n)}**",
        f"{100 * proven:.1f}%; **{trials(en)}** ({100 * fe:.2f}%)",
    ]
    for shape, _ in SHAPES:
        claims, _ = first_cross(
            p_values(*paths_of(rng, paths, 30, shape, 0.0, 0.02, twos), rule, l30) < lv30, l30
        )
        cells.append(rate(claims))
    return [name, *cells]


def branches(a, b, o, looks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per path and look: the pooled rule's p, the paired t's p, and whether the sums' variance is at least the
    differences' (after the order term) — where a switch takes the pooled rule."""
    pooled, paired, take = [], [], []
    for n in (int(k) for k in looks):
        for rule, out in (("pooled", pooled), ("paired", paired)):
            est, se, df = statistic(a, b, o, rule, n)
            out.append(2 * special.stdtr(df, -np.abs(est) / np.maximum(se, 1e-300)))
        _, vd, _ = _fit(b[:, :n] - a[:, :n], o[:, :n], n)
        take.append((a[:, :n] + b[:, :n]).var(1, ddof=1) >= vd)
    return np.array(pooled).T, np.array(paired).T, np.array(take).T


def switch_rows(paths: int, seed: int) -> list[list[str]]:
    """A switch (rounds in twos): the pooled rule where the sums' variance is at least the differences', else the
    paired t — each judged by its own calibrated levels, or (scaled) by one more level per look on the ratio of
    p to its branch's level, calibrated so that the switch itself spends α on normal paths."""
    rng = np.random.default_rng(seed)
    rows: list[list[str]] = [["switch, each branch its own levels"], ["switch, scaled to spend α"]]
    for looks, cv in ((np.arange(5, 21), 0.015), (np.arange(5, 31), 0.02)):
        pp, pq, take = branches(*paths_of(rng, paths, int(looks[-1]), "normal", 0.0, cv, True), looks)
        lp, lq = calibrate(pp, looks, ALPHA, SPENDING), calibrate(pq, looks, ALPHA, SPENDING)
        ratio = np.where(take, pp / np.maximum(lp, 1e-300), pq / np.maximum(lq, 1e-300))
        scale = calibrate(ratio, looks, ALPHA, SPENDING)
        cases = [("normal", EFFECT)] if looks[-1] == 20 else [(shape, 0.0) for shape, _ in SHAPES]
        for shape, change in cases:
            pp, pq, take = branches(*paths_of(rng, paths, int(looks[-1]), shape, change, cv, True), looks)
            ratio = np.where(take, pp / np.maximum(lp, 1e-300), pq / np.maximum(lq, 1e-300))
            for row, hit in zip(rows, (ratio < 1.0, ratio < scale), strict=True):
                claimed, n = first_cross(hit, looks)
                row.append(f"{100 * claimed.mean():.1f}%; **{trials(n)}**" if change else rate(claimed))
                if change:
                    row.append("(not evaluated)")
    return rows


def trials(n: np.ndarray) -> str:
    return f"{n.mean():.2f} ± {n.std() / math.sqrt(n.size):.2f}"


def rate(hit: np.ndarray) -> str:
    p = float(hit.mean())
    mark = "**" if p > 0.055 else ""
    return f"{mark}{100 * p:.2f}%{mark} ± {100 * math.sqrt(p * (1 - p) / hit.size):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--paths", type=int, default=40_000, help="paths a row (and to calibrate each rule's levels)"
    )
    ap.add_argument("--seed", type=int, default=36)
    args = ap.parse_args()
    start, load0 = time.monotonic(), os.getloadavg()[0]
    rows = [rule_rows(r, twos, name, args.paths, args.seed + k) for k, (r, twos, name) in enumerate(RULES)]
    rows += switch_rows(args.paths, args.seed + len(RULES))
    head = [
        "",
        "power at 3%, CV 1.5%, 5 to 20: power; trials per side",
        "A/A CV 1.5%, 5 to 30: proven within ±2%; trials per side (false equivalence at +2%)",
    ]
    head += [f"A/A false claims, 5 to 30: {text}" for _, text in SHAPES]
    note = f"{args.paths} paths a row; mean ± its standard error; a rate ± √(p(1 − p)/paths); bold: a goal's figure, or a rate above 5.5%"
    print_figures(note, head[1:], [(r[0], r[1:]) for r in rows])
    print_provenance(start, load0)


if __name__ == "__main__":
    main()
