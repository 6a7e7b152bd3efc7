"""A decision stop on the unpaired variance, guarded by the paired one: where it holds α (issue 36).

bench/decision_order.py found that the variance of a round's sum s = a + b pooled with that of its difference
d = b − a reaches the trial goals but loses α when the two trials of a round are negatively correlated. Pooled
with equal weights (no order term), that variance is (Var(d) + Var(s))/2 = Var(a) + Var(b): the unpaired
(Welch) variance of the two cells, with Welch–Satterthwaite's df — which the code already calibrates for boots
(`t_levels(two_sample=True)`). bench/round_correlation.py measures the correlation on real runs of this
machine; this script evaluates, on simulated log values (rounds in twos), each rule calibrated as the code
calibrates (stats.sequential.t_levels: HSD γ 2 less the margin for the difference, equivalence from the 8th pair
at 2α with HSD γ 3):

* paired: the paired t (the code before);
* welch: Welch's t of the two cells' values, paired by nothing, at Welch's levels;
* guard q: welch, except at a look where the paired variance exceeds the sums' one by more than chance allows
  (Var(d)/Var(s) beyond the upper q quantile of F(n − 1, n − 1)): there the paired t at the paired levels.

Rows: power and trials at 3% / CV 1.5% (5 to 20 trials), A/A proven equivalent within ±2% (CV 1.5%, 5 to 30)
and the false equivalence at exactly +2%, coverage of the repeated interval at 1.0 / 1.03 / 1.2 (CV 2%), and A/A
false claims (5 to 30, CV 2%) on every shape: the shapes of bench/decision_order.py, one late +20% outlier (no
drop-one check here: the code's applies to every rule alike), a +15% step in both cells after the first look,
integers, and a correlation ρ inside the round (the round's two trials; no order) over a grid of ρ — with each
path's ρ drawn from a distribution too (`rho~M,S`: normal, mean M, sd S, clipped to ±0.95: runs differ).

Run: .venv/bin/python bench/decision_rho.py [--paths N] [--rules paired,welch,guard:0.1]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from scipy import special

from _table import print_figures, print_provenance
from decision_order import calibrate, paths_of, rate, trials
from fairmark.stats.sequential import EQ_SPENDING, SPENDING, t_levels

ALPHA = 0.05
EFFECT, EQ_MARGIN = math.log(1.03), math.log(1.02)
POWER_SHAPES = ("normal", "rho:0.25", "ar1")
SHAPES = (
    ("normal", "normal, CV 2%"),
    ("t3", "t(3)"),
    ("lognormal", "lognormal (skew 1.75)"),
    ("hiccups", "hiccups: 3% of trials +20%"),
    ("ar1", "AR(1) φ 0.9 drift shared by the cells"),
    ("unequal", "unequal CVs: A 0.5%, B 5%"),
    ("unequal2", "unequal CVs: A 1%, B 3%"),
    ("position:1", "order effect: 2nd trial of a round +1 CV"),
    ("position:3", "order effect: 2nd trial of a round +3 CV (6%)"),
    ("outlier", "one +20% outlier after the first look"),
    ("step", "+15% step in both cells after the first look"),
    ("integers", "integers (mean 10.4, CV 3%)"),
    ("rho:0.3", "ρ +0.3 inside the round"),
    ("rho:-0.05", "ρ −0.05"),
    ("rho:-0.1", "ρ −0.1"),
    ("rho:-0.15", "ρ −0.15"),
    ("rho:-0.2", "ρ −0.2"),
    ("rho:-0.3", "ρ −0.3"),
    ("rho:-0.5", "ρ −0.5"),
    ("rho:-0.8", "ρ −0.8"),
)


def shaped(rng, paths: int, n: int, shape: str, change: float, cv: float):
    """(log a, log b) of `paths` runs of n rounds (rounds in twos), B `change` (a log ratio) slower."""
    name = shape.partition(":")[0]
    if name == "unequal2":
        z = rng.standard_normal((2, paths, n))
        return 0.01 * z[0], 0.03 * z[1] + change
    if shape.startswith("rho~"):
        m, s = (float(x) for x in shape[4:].split(","))
        r = np.clip(rng.normal(m, s, (paths, 1)), -0.95, 0.95)
        z = rng.standard_normal((2, paths, n))
        return cv * z[0], cv * (r * z[0] + np.sqrt(1 - r * r) * z[1]) + change
    if name == "integers":  # mean 10.4, CV 3%: rounded, on the log scale
        z = rng.standard_normal((2, paths, n))
        va = np.maximum(np.round(10.4 * np.exp(0.03 * z[0])), 1.0)
        vb = np.maximum(np.round(10.4 * np.exp(0.03 * z[1] + change)), 1.0)
        return np.log(va), np.log(vb)
    base = "normal" if name in ("outlier", "step") else shape
    a, b, _ = paths_of(rng, paths, n, base, change, cv, True)
    if name in ("outlier", "step"):
        at = rng.integers(5, 13, paths)  # within the 8 rounds after the first look (verdict_simulation's)
        rows = np.arange(paths)
        if name == "outlier":
            which = rng.random(paths) < 0.5
            a[rows[which], at[which]] += math.log(1.2)
            b[rows[~which], at[~which]] += math.log(1.2)
        else:
            later = np.arange(n)[None, :] >= at[:, None]
            a, b = a + later * math.log(1.15), b + later * math.log(1.15)
    return a, b


class Stats:
    """Each look's statistics of every path: the mean difference, the paired and the Welch standard errors
    and df, and whether the guard (at quantile q) takes the paired t there."""

    def __init__(self, a: np.ndarray, b: np.ndarray, looks: np.ndarray):
        n = looks.astype(float)
        ca, cb = np.cumsum(a, 1)[:, looks - 1], np.cumsum(b, 1)[:, looks - 1]
        caa, cbb = np.cumsum(a * a, 1)[:, looks - 1], np.cumsum(b * b, 1)[:, looks - 1]
        cab = np.cumsum(a * b, 1)[:, looks - 1]
        va = np.maximum(caa - ca * ca / n, 0) / (n - 1)
        vb = np.maximum(cbb - cb * cb / n, 0) / (n - 1)
        cov = (cab - ca * cb / n) / (n - 1)
        self.est = (cb - ca) / n
        self.vd = np.maximum(va + vb - 2 * cov, 1e-300)
        self.vs = np.maximum(va + vb + 2 * cov, 1e-300)
        self.se_p, self.df_p = np.sqrt(self.vd / n), np.broadcast_to(n - 1, self.est.shape)
        vw = np.maximum(va + vb, 1e-300)
        self.se_w = np.sqrt(vw / n)
        self.df_w = vw**2 / np.maximum((va * va + vb * vb) / (n - 1), 1e-300)
        self.n = n

    def fires(self, q: float) -> np.ndarray:
        if q <= 0:
            return np.zeros(self.est.shape, dtype=bool)
        return self.vd / self.vs > special.fdtri(self.n - 1, self.n - 1, 1 - q)


def branch_levels(looks: np.ndarray, eq: bool = False, rule: str = "") -> dict[str, np.ndarray]:
    """The code's own levels (stats.sequential.t_levels) of the paired and the Welch t at these looks; for a
    "scaled" rule, also a factor per look on both, calibrated on 100 000 normal paths (ρ 0) so that the rule
    as a whole spends the spending function's α."""
    tl = tuple(int(x) for x in looks)
    alpha, sp = (2 * ALPHA, EQ_SPENDING) if eq else (ALPHA, SPENDING)
    out = {
        "paired": np.array(t_levels(tl, alpha, sp, False)),
        "welch": np.array(t_levels(tl, alpha, sp, True)),
    }
    if rule.startswith("scaled"):
        rng = np.random.default_rng(7)
        s = Stats(*shaped(rng, 100_000, int(looks[-1]), "normal", 0.0, 0.02), looks)
        _, _, paired = judged(s, rule, out)
        p_p = 2 * special.stdtr(s.df_p, -np.abs(s.est) / s.se_p) / np.maximum(out["paired"], 1e-300)
        p_w = 2 * special.stdtr(s.df_w, -np.abs(s.est) / s.se_w) / np.maximum(out["welch"], 1e-300)
        out["scale"] = calibrate(np.where(paired, p_p, p_w), looks, alpha, sp)
    return out


def crit(level: np.ndarray, df: np.ndarray) -> np.ndarray:
    return np.where(level > 0, special.stdtrit(df, 1 - np.maximum(level, 1e-300) / 2), np.inf)


def judged(s: Stats, rule: str, lv: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, half-width of the repeated interval, whether the paired t was taken), per path and look."""
    kind, _, q = rule.partition(":")
    if kind == "paired":
        paired = np.ones(s.est.shape, dtype=bool)
    elif kind == "welch":
        paired = np.zeros(s.est.shape, dtype=bool)
    elif kind in (
        "switch",
        "scaled",
    ):  # the paired t also where the sums' variance exceeds the differences' beyond chance
        q1, q2 = (float(x) for x in q.split("/"))
        paired = s.fires(q1) | (s.vs / s.vd > special.fdtri(s.n - 1, s.n - 1, 1 - q2))
    else:
        paired = s.fires(float(q or 0))
    scale = lv.get("scale", np.ones(s.est.shape[1]))[None, :]  # "scaled": one more factor per look
    half_p = crit(lv["paired"][None, :] * scale, s.df_p) * s.se_p
    half_w = crit(lv["welch"][None, :] * scale, s.df_w) * s.se_w
    return s.est, np.where(paired, half_p, half_w), paired


def first(hit: np.ndarray, looks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(any hit, the look of the first, its column)."""
    any_ = hit.any(1)
    col = np.where(any_, hit.argmax(1), looks.size - 1)
    return any_, looks[col], col


def rule_column(rule: str, paths: int, seed: int, shapes) -> list[str]:
    rng = np.random.default_rng(seed)
    l20, l30, eq30 = np.arange(5, 21), np.arange(5, 31), np.arange(8, 31)
    lv20, lv30 = branch_levels(l20, rule=rule), branch_levels(l30, rule=rule)
    lveq = branch_levels(eq30, eq=True, rule=rule)
    cells = []
    for shape in POWER_SHAPES:
        est, half, _ = judged(Stats(*shaped(rng, paths, 20, shape, EFFECT, 0.015), l20), rule, lv20)
        hit, n, _ = first(np.abs(est) > half, l20)
        cells.append(
            f"{100 * hit.mean():.1f}%; **{trials(n)}**"
            if shape == "normal"
            else f"{100 * hit.mean():.1f}%; {trials(n)}"
        )
    cells.append(equivalence(rng, rule, paths, (l30, eq30), (lv30, lveq)))
    for ratio in (1.0, 1.03, 1.2):  # coverage of the interval at the stop (difference or equivalence)
        cells.append(coverage(rng, rule, paths, math.log(ratio), (l30, eq30), (lv30, lveq)))
    for shape, _ in shapes:
        est, half, _ = judged(Stats(*shaped(rng, paths, 30, shape, 0.0, 0.02), l30), rule, lv30)
        cells.append(rate(first(np.abs(est) > half, l30)[0]))
    return cells


def stops(s: Stats, rule: str, levels, looks) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where each path stops (difference, or equivalence from the 8th pair): (column, decided different,
    proven equivalent, the estimate and half-width there)."""
    l30, eq30 = looks
    lv30, lveq = levels
    est, half, paired = judged(s, rule, lv30)
    diff = np.abs(est) > half
    half_eq = np.full(est.shape, np.inf)
    off = eq30[0] - l30[0]
    scale = lveq.get("scale", np.ones(eq30.size))[None, :]
    eh_p = crit(lveq["paired"][None, :] * scale, s.df_p[:, off:]) * s.se_p[:, off:]
    eh_w = crit(lveq["welch"][None, :] * scale, s.df_w[:, off:]) * s.se_w[:, off:]
    half_eq[:, off:] = np.where(paired[:, off:], eh_p, eh_w)
    eq = (np.abs(est) + half_eq < EQ_MARGIN) & ~diff
    done, _, col = first(diff | eq, l30)
    rows = np.arange(est.shape[0])
    return col, diff[rows, col] & done, eq[rows, col] & done, np.stack([est[rows, col], half[rows, col]])


def equivalence(rng, rule, paths, looks, levels) -> str:
    l30 = looks[0]
    col, _, proven, _ = stops(Stats(*shaped(rng, paths, 30, "normal", 0.0, 0.015), l30), rule, levels, looks)
    at = Stats(*shaped(rng, paths, 30, "normal", EQ_MARGIN, 0.015), l30)
    _, _, false_eq, _ = stops(at, rule, levels, looks)
    return f"{100 * proven.mean():.1f}%; **{trials(l30[col])}** ({100 * false_eq.mean():.2f}%)"


def coverage(rng, rule, paths, change, looks, levels) -> str:
    col, _, _, (est, half) = stops(
        Stats(*shaped(rng, paths, 30, "normal", change, 0.02), looks[0]), rule, levels, looks
    )
    covered = np.abs(est - change) <= half
    p = float(covered.mean())
    mark = "**" if p < 0.95 else ""
    return f"{mark}{100 * p:.2f}%{mark} ± {100 * math.sqrt(p * (1 - p) / paths):.2f}; {trials(looks[0][col])}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paths", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--rules", default="paired,welch,guard:0.05,guard:0.1,guard:0.2")
    ap.add_argument("--shapes", default="", help="extra shapes, comma-separated (e.g. rho~0.1,0.2)")
    args = ap.parse_args()
    shapes = list(SHAPES) + [(s, s) for s in args.shapes.split(";") if s]
    start, load0 = time.monotonic(), os.getloadavg()[0]
    rules = args.rules.split(",")
    cols = [rule_column(r, args.paths, args.seed + k, shapes) for k, r in enumerate(rules)]
    head = [
        "power at 3%, CV 1.5%, 5 to 20: power; trials per side",
        "the same, ρ +0.25 inside the round",
        "the same, AR(1) φ 0.9 drift shared by the cells",
        "A/A CV 1.5%, 5 to 30: proven within ±2%; trials per side (false equivalence at +2%)",
        "coverage at 1.0, CV 2%, 5 to 30; trials per side",
        "coverage at 1.03",
        "coverage at 1.2",
    ]
    head += [f"A/A false claims, 5 to 30: {text}" for _, text in shapes]
    note = f"{args.paths} paths a row; mean ± its standard error; bold: a goal's figure, a rate above 5.5%, a coverage below 95%"
    print_figures(note, head, list(zip(rules, cols, strict=True)))
    print_provenance(start, load0)


if __name__ == "__main__":
    main()
