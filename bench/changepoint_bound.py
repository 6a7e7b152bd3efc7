"""How much power any change-point test of 20 runs can have while it holds its level under AR(1) drift: the
bound behind the rates of bench/continual_changepoints.py (issue 38 item 3).

An oracle told where the step is (index 10 of 20) and how large it is (in units of the noise's sd), but not the
level or the noise's scale: the best test invariant to those compares the density of the centred series'
direction under "that step in independent noise" with the largest over AR(1) φ in [0, 0.6] of its density under
"no step, AR(1) noise"; its critical value is the largest over φ 0, 0.15, …, 0.6 of the simulated quantiles. A
real detector knows neither place nor size, so its power is lower; if the oracle's is below a goal, no detector
meets it at that level.

The second table bounds a detector that knows the step's size but not its place, and treats every place alike:
by Neyman–Pearson, no location- and scale-free test whose level holds at AR(1) φ 0.6 has a larger power
averaged over the places 3 … 17 (a uniform prior) than the likelihood ratio of "that step at a uniform place"
against φ 0.6 alone. What it assumes, exactly: the step is in independent Gaussian noise (the goal's series:
+5% at sd 2% is 2.5 sd), of either sign; the level is held at α at φ 0.6 alone (a test held over φ in
[0, 0.6] is one of these, so the bound holds for it too) — issue 38 allows false alarms up to 2α, so the rows
at 2α are the ones that bound its goals. It bounds the AVERAGE over places, not the power at one place: a test
with the same power at every place has at most the average at place 10; one that favours the middle can have
more there (the oracle above, told the place, is the limit) by having less elsewhere. With --favour γ, the
prior ∝ (τ(n − τ))^γ gives the best such trade: no test has a larger power averaged with those weights, so
none has more at 10 without less at the ends than that row's test.

    .venv/bin/python bench/changepoint_bound.py [--series 40000] [--placeless 10000] [--placeless-only] [--favour 1,2,4,8]
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
from scipy.signal import lfilter

N = 20
K = N - 1
PHIS = (0.0, 0.15, 0.3, 0.45, 0.6)
R_GRID = np.linspace(1e-3, 40, 4000)[None, :]


def ar1(rng: np.random.Generator, r: int, phi: float) -> np.ndarray:
    e = rng.standard_normal((r, N))
    e[:, 0] /= math.sqrt(1 - phi * phi)
    return lfilter([math.sqrt(1 - phi * phi)], [1.0, -phi], e, axis=1)


def contrasts() -> np.ndarray:
    """An orthonormal basis of the series orthogonal to a constant (the level is not known)."""
    return np.linalg.qr(np.c_[np.ones(N), np.eye(N)[:, : N - 1]])[0][:, 1:]


def log_null(z: np.ndarray, q: np.ndarray) -> np.ndarray:
    """log of the largest AR(1) direction density over φ in [0, 0.6] (13 values)."""
    i = np.arange(N)
    out = []
    for phi in np.linspace(0, 0.6, 13):
        s = q.T @ phi ** np.abs(i[:, None] - i[None, :]) @ q
        si, ld = np.linalg.inv(s), np.linalg.slogdet(s)[1]
        out.append(-0.5 * ld - K / 2 * np.log(np.einsum("ri,ij,rj->r", z, si, z)))
    return np.max(out, axis=0)


def log_alt(z: np.ndarray, m: np.ndarray) -> np.ndarray:
    """log density of the direction of N(m, I), up to the constant the null shares: ∫ r^(k-1) e^(-|r z - m|²/2) dr."""
    a = (z @ m)[:, None]
    lg = (K - 1) * np.log(R_GRID) - 0.5 * (R_GRID * R_GRID - 2 * R_GRID * a + m @ m)
    top = lg.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(lg - top).sum(axis=1, keepdims=True)))[:, 0]


def _log_mean(v: np.ndarray, lw: np.ndarray) -> np.ndarray:
    """log Σ exp(v + lw) over the first axis (lw: log prior weights summing to 1)."""
    v = v + lw[:, None]
    top = v.max(axis=0)
    return top + np.log(np.exp(v - top).sum(axis=0))


def placeless(rng: np.random.Generator, r: int, q: np.ndarray, favour: list[float]) -> None:
    """The Neyman–Pearson bound on power averaged over the step's place, its size known (see the docstring); with
    `favour` γ > 0, the same under a prior ∝ (τ(n − τ))^γ that favours the middle: the best a test can trade the
    ends' power for the middle's."""
    i = np.arange(N)
    s = q.T @ 0.6 ** np.abs(i[:, None] - i[None, :]) @ q
    si, ld = np.linalg.inv(s), np.linalg.slogdet(s)[1]
    places = list(range(3, N - 2))

    def direction(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        y = x @ q
        z = y / np.linalg.norm(y, axis=1, keepdims=True)
        return z, -0.5 * ld - K / 2 * np.log(np.einsum("ri,ij,rj->r", z, si, z))

    print(
        "| step (noise sd) | prior ∝ (τ(n−τ))^γ | α at φ 0.6 | power averaged over places 3–17 "
        "| at 3 | at 10 | at 17 |\n|---|---|---|---|---|---|---|"
    )
    for size in (2.5, 10 / 3):
        ms = [q.T @ np.r_[np.zeros(t), np.full(N - t, sg * size)] for t in places for sg in (-1, 1)]

        def alts(
            zn: tuple[np.ndarray, np.ndarray], ms: list[np.ndarray] = ms
        ) -> tuple[np.ndarray, np.ndarray]:
            return np.array([log_alt(zn[0], m) for m in ms]), zn[1]

        null = alts(direction(ar1(rng, r, 0.6)))
        alt = {
            t: alts(direction(np.r_[np.zeros(t), np.full(N - t, size)] + rng.standard_normal((r // 5, N))))
            for t in places
        }
        for gamma in (0.0, *favour):
            w = np.repeat([(t * (N - t)) ** gamma for t in places], 2)
            lw = np.log(w / w.sum())
            crits = np.quantile(_log_mean(null[0], lw) - null[1], [0.99, 0.98, 0.95, 0.9])
            for alpha, crit in zip((0.01, 0.02, 0.05, 0.1), crits, strict=True):
                p = {t: 100 * float(np.mean(_log_mean(v, lw) - nv > crit)) for t, (v, nv) in alt.items()}
                print(
                    f"| {size:.2f} | {gamma:g} | {alpha:g} | {np.mean(list(p.values())):.1f}% | {p[3]:.1f}% "
                    f"| {p[10]:.1f}% | {p[17]:.1f}% |"
                )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", type=int, default=40_000)
    ap.add_argument("--placeless", type=int, default=10_000, help="null series of the second table")
    ap.add_argument("--placeless-only", action="store_true")
    ap.add_argument("--favour", default="", help="γ of middle-favouring priors, e.g. 1,2,4,8")
    args = ap.parse_args()
    r = args.series
    rng = np.random.default_rng(38)
    q = contrasts()
    favour = [float(g) for g in args.favour.split(",") if g]
    if args.placeless_only:
        placeless(rng, args.placeless, q, favour)
        return 0
    print("| step (noise sd) | at | α | oracle's power | critical value's φ |\n|---|---|---|---|---|")
    for size, tau in ((2.5, 10), (10 / 3, 10)):
        mean = np.r_[np.zeros(tau), np.full(N - tau, size)]
        m = q.T @ mean

        def stat(x: np.ndarray, m: np.ndarray = m) -> np.ndarray:
            y = x @ q
            z = y / np.linalg.norm(y, axis=1, keepdims=True)
            return log_alt(z, m) - log_null(z, q)

        nulls = {phi: stat(ar1(rng, r, phi)) for phi in PHIS}
        alt = stat(mean + rng.standard_normal((r, N)))
        for alpha in (0.01, 0.05):
            crit = {phi: float(np.quantile(v, 1 - alpha)) for phi, v in nulls.items()}
            worst = max(crit, key=lambda p: crit[p])
            print(
                f"| {size:.2f} | {tau} of {N} | {alpha:g} | {100 * np.mean(alt > crit[worst]):.1f}% | {worst:g} |"
            )
    print()
    placeless(rng, args.placeless, q, favour)
    return 0


if __name__ == "__main__":
    sys.exit(main())
