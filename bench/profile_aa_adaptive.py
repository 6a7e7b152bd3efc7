"""Does the adaptive stop of the CPU-profiled rounds inflate false claims? A/A, by simulation (issue 35 follow-up).

    .venv/bin/python bench/profile_aa_adaptive.py [--reps 2000] [--cv 2,5,8] [--functions 6,11] [--max 16,20]
    .venv/bin/python bench/profile_aa_adaptive.py --no-synthetic --record   (explain_validation's A/A pool,
        recorded here; or --aa-store sqlite:///PATH of recorded A/A runs)

`fairmark run --profile cpu` / `--explain` take `profiled_trials` rounds, then one more at a time; before each
further round (run/loop/runner.py `_profiled_rounds`) run/loop/profiled.py asks `top_decided(compare_profiles(A,
B))` over every profiled trial so far: with >= MIN_DECIDE (5) a side, the self-time function with the largest
difference claimed (Benjamini-Hochberg at 5% over the functions tested) or bounded within ±1% of the CPU time per
trial. Undecided after the round before the last, the `max_profiled`-th round is the last. The report then
compares every profiled trial: that is the comparison whose claims this script counts.

Method. One replication is an A/A pair: both sides the same program, `max` rounds a side generated up front, and
the procedure replayed on its prefixes with the product's own `compare_profiles` and `top_decided`: the first n in
5..max-1 that is decided ends it with n trials a side, else n = max. The same replication gives the fixed-n rates
at 5 + 5 and at max + max (the prefixes the procedure would not stop on are compared all the same).

(a) Synthetic program: k functions (leaves under main, every other one under a `work` frame, so the inclusive
rows main, work and the leaves are tested in the same family as the report's), mean CPU time shares ∝ 1/(i+1);
per replication a CPU time per trial drawn uniform in 0.5-1 s. Per trial each function's time is its mean times an
independent lognormal factor of the given CV; the trial's CPU time is their sum; perf's cpu-clock at ~1000 Hz is
a Poisson(1000 x CPU s) number of samples, split among the functions multinomially by their shares of the trial.

(b) --record / --aa-store: the recorded profiled trials of bench/explain_validation.py's A/A pool (its `aa_pool`: both
sides of A/A runs); each replication draws 2 x max of them without replacement, the first max side A by round.

A claim counted: any self-time function claimed ("self", what the report's sentence names), any row claimed
(self or inclusive, --json's), and the top self row claimed (the one the stop looks at). 95% Wilson intervals.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import _commit
from fairmark.run.loop.profiled import MIN_DECIDE, top_decided
from fairmark.stats.attribution_diff import AttributionDiff, ProfiledTrial, compare_profiles

HZ = 1000.0  # perf record -e cpu-clock's default rate: samples per CPU second
SEED = 3535
Z95 = 1.959964


@dataclass
class Tally:
    """Replications of one row: how many ended with each kind of claim, per procedure."""

    reps: int = 0
    counts: dict[str, list[int]] = field(default_factory=dict)  # procedure -> [self, any, top]
    rounds: list[int] = field(default_factory=list)  # the adaptive procedure's trials a side (first max)

    def add(self, procedure: str, d: AttributionDiff) -> None:
        c = self.counts.setdefault(procedure, [0, 0, 0])
        c[0] += bool(d.claimed("self"))
        c[1] += any(f.claimed for f in d.functions)
        selfrows = [f for f in d.functions if f.mode == "self"]
        c[2] += bool(selfrows and selfrows[0].claimed)


def wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def program(k: int) -> tuple[list[str], np.ndarray]:
    """The k leaf functions' stacks and their mean shares of the CPU time."""
    stacks = [f"prog;main;{'work;' if i % 2 else ''}f{i}" for i in range(k)]
    shares = 1.0 / np.arange(1, k + 1)
    return stacks, shares / shares.sum()


def synthetic_trial(rng: np.random.Generator, stacks: list[str], mean_s: np.ndarray, cv: float, r: int):
    sigma = math.sqrt(math.log(1 + cv * cv))
    times = mean_s * rng.lognormal(-sigma * sigma / 2, sigma, size=len(mean_s))
    cpu = float(times.sum())
    counts = rng.multinomial(rng.poisson(HZ * cpu), times / cpu)
    folded = "\n".join(f"{s} {c}" for s, c in zip(stacks, counts, strict=True) if c)
    return ProfiledTrial(r, folded, cpu)


def synthetic_sides(rng: np.random.Generator, k: int, cv: float, rounds: int):
    stacks, shares = program(k)
    mean_s = shares * rng.uniform(0.5, 1.0)
    side = [[synthetic_trial(rng, stacks, mean_s, cv, r) for r in range(rounds)] for _ in range(2)]
    return side[0], side[1]


def pool_sides(rng: random.Random, pool: list[ProfiledTrial], rounds: int):
    draw = rng.sample(pool, 2 * rounds)
    a = [ProfiledTrial(r, t.folded, t.cpu_s) for r, t in enumerate(draw[:rounds])]
    b = [ProfiledTrial(r, t.folded, t.cpu_s) for r, t in enumerate(draw[rounds:])]
    return a, b


def replay(tally: Tally, a: list[ProfiledTrial], b: list[ProfiledTrial], maxes: list[int]) -> None:
    """One A/A replication: every prefix from MIN_DECIDE compared once; each procedure read off them."""
    diffs: dict[int, AttributionDiff] = {}
    for n in range(MIN_DECIDE, max(maxes) + 1):
        d = compare_profiles(a[:n], b[:n])
        assert d is not None
        diffs[n] = d
    tally.reps += 1
    tally.add(f"fixed {MIN_DECIDE}", diffs[MIN_DECIDE])
    for m in maxes:
        stop = next((n for n in range(MIN_DECIDE, m) if top_decided(diffs[n])), m)
        tally.add(f"adaptive ≤{m}", diffs[stop])
        tally.add(f"fixed {m}", diffs[m])
        if m == maxes[0]:
            tally.rounds.append(stop)


def report(label: str, tally: Tally, maxes: list[int]) -> None:
    order = [f"fixed {MIN_DECIDE}"] + [p for m in maxes for p in (f"adaptive ≤{m}", f"fixed {m}")]
    mean_rounds = sum(tally.rounds) / len(tally.rounds)
    stopped = sum(r < maxes[0] for r in tally.rounds) / len(tally.rounds)
    print(f"{label}: {tally.reps} A/A replications; adaptive ≤{maxes[0]}: {mean_rounds:.1f} trials a side on")
    print(f"  average, {100 * stopped:.1f}% stopped before the last round")
    for p in order:
        cells = []
        for k in tally.counts[p]:
            lo, hi = wilson(k, tally.reps)
            cells.append(f"{100 * k / tally.reps:5.1f}% ({100 * lo:.1f}-{100 * hi:.1f})")
        print(f"  | {p:<12} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


def synthetic(reps: int, ks: list[int], cvs: list[float], maxes: list[int]) -> None:
    for k in ks:
        for cv in cvs:
            rng = np.random.default_rng([SEED, k, round(cv * 1000)])
            tally = Tally()
            for _ in range(reps):
                replay(tally, *synthetic_sides(rng, k, cv, max(maxes)), maxes)
            report(f"synthetic, {k} functions, CV {100 * cv:.0f}%", tally, maxes)


def recorded(store_url: str | None, reps: int, maxes: list[int]) -> None:
    import explain_validation  # bench/: its A/A pool (records one when no store is given)

    with tempfile.TemporaryDirectory() as tmp:
        pool = explain_validation.aa_pool(Path(tmp), store_url)
    maxes = [m for m in maxes if 2 * m <= len(pool)]
    if not maxes:
        raise SystemExit(f"the pool has {len(pool)} profiled trials: too few for 2 x max_profiled")
    rng, tally = random.Random(SEED), Tally()
    for _ in range(reps):
        replay(tally, *pool_sides(rng, pool, max(maxes)), maxes)
    report(f"recorded A/A pool ({len(pool)} profiled trials)", tally, maxes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--functions", default="6,11", help="leaf functions of the synthetic program")
    ap.add_argument("--cv", default="2,5,8", help="per-function CV per trial, percent")
    ap.add_argument("--max", default="16,20", help="max_profiled (plan default 20; the tests' plans 16)")
    ap.add_argument("--aa-store", help="sqlite:///PATH of recorded A/A runs (explain_validation's pool)")
    ap.add_argument("--record", action="store_true", help="record explain_validation's A/A pool and use it")
    ap.add_argument("--no-synthetic", action="store_true")
    _commit.add_option(ap)
    args = ap.parse_args()
    maxes = sorted(int(m) for m in args.max.split(","))
    t0, load0 = time.time(), os.getloadavg()[0]
    print("claims among A/A replications: any self row | any row (self or inclusive) | the top self row")
    if not args.no_synthetic:
        cvs = [float(c) / 100 for c in args.cv.split(",")]
        synthetic(args.reps, [int(k) for k in args.functions.split(",")], cvs, maxes)
    if args.aa_store or args.record:
        recorded(args.aa_store, args.reps, maxes)
    print(
        f"{_commit.commit(args.commit)}, {time.time() - t0:.0f} s, load average {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
