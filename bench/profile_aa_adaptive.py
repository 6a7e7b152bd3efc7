"""Does the adaptive stop of the CPU-profiled rounds inflate false claims? A/A, by simulation (issue 35 follow-up).

    .venv/bin/python bench/profile_aa_adaptive.py [--reps 2000] [--cv 2,5,8] [--functions 6,11] [--max 16,20]
    .venv/bin/python bench/profile_aa_adaptive.py --no-synthetic --record   (explain_validation's A/A pool,
        recorded here; or --aa-store sqlite:///PATH of recorded A/A runs)
    .venv/bin/python bench/profile_aa_adaptive.py --plant 2 --cv 5   (power: B's f1 costs 2% of the CPU more)

`fairmark run --profile cpu` / `--explain` take `profiled_trials` rounds, then one more at a time; at each look
(run/loop/runner.py `_profiled_rounds`, run/loop/profiled.py `may_stop`) it asks `top_decided(compare_profiles(A,
B))` over every profiled trial so far: with >= MIN_DECIDE (5) a side, the self-time function with the largest
difference claimed (Benjamini-Hochberg over the functions tested) or bounded within ±1% of the CPU time per
trial. Undecided at the last look but one, the `max_profiled`-th round is the last. The report then compares
every profiled trial: that is the comparison whose claims this script counts. Two procedures, side by side:

* every round (the product before the schedule): a look after every round from 5 to max - 1, each at α = 5%;
* looks (the product now, stats/profile_looks.py): looks at 5, 10, 20 … and max only (the product's `looks` and
  `may_stop` for the plan's default profiled_trials = 2), each — the stop's and the report's — at its share of
  α, in proportion to its rounds (the product's compare_profiles(looks=...));
* equal split: the same looks at α / L each (L looks), the split the product does not take: beside it, the
  power its proportional split buys (--plant).

Method. One replication is an A/A pair: both sides the same program, `max` rounds a side generated up front, and
each procedure replayed on its prefixes with the product's own functions: the first look that is decided ends
it with that many trials a side, else n = max. The same replication gives the fixed-n rates at 5 + 5 and at
max + max (the prefixes the procedure would not stop on are compared all the same, at α).

(a) Synthetic program: k functions (leaves under main, every other one under a `work` frame, so the inclusive
rows main, work and the leaves are tested in the same family as the report's), mean CPU time shares ∝ 1/(i+1);
per replication a CPU time per trial drawn uniform in 0.5-1 s. Per trial each function's time is its mean times an
independent lognormal factor of the given CV; the trial's CPU time is their sum; perf's cpu-clock at ~1000 Hz is
a Poisson(1000 x CPU s) number of samples, split among the functions multinomially by their shares of the trial.
--plant P: on side B, f1 (the second largest, under `work`) costs P% of the mean CPU time per trial more: then
the rows count the runs that name f1 first (power) beside the false claims of any other self row.

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
from fairmark.plan.model import RunPolicy
from fairmark.run.loop.profiled import MIN_DECIDE, looks, may_stop, top_decided
from fairmark.stats.attribution_diff import AttributionDiff, ProfiledTrial, compare_profiles
from fairmark.stats.profile_looks import ALPHA, legacy_looks

HZ = 1000.0  # perf record -e cpu-clock's default rate: samples per CPU second
SEED = 3535
Z95 = 1.959964
PROFILED_TRIALS = 2  # the plan's default
PLANTED = "f1"


class _CpuProfiler:
    """What may_stop asks of a profiler: its name (the CPU profiler's rounds are the adaptive ones)."""

    name = "profile.cpu"
    unavailable = None


@dataclass
class Tally:
    """Replications of one row: how many ended with each kind of claim, per procedure."""

    reps: int = 0
    counts: dict[str, list[int]] = field(default_factory=dict)  # procedure -> [self, any, top, planted first]
    rounds: dict[str, list[int]] = field(default_factory=dict)  # procedure -> trials a side it ended with
    stopped: dict[str, int] = field(default_factory=dict)  # procedure -> runs that ended before its last look

    def add(self, procedure: str, d: AttributionDiff, planted: bool, last: int) -> None:
        c = self.counts.setdefault(procedure, [0, 0, 0, 0])
        # with a plant, f1 differs, and so do the inclusive rows of its callers: the rest may not
        moved = {(PLANTED, "self"), (PLANTED, "inclusive"), ("main", "inclusive"), ("work", "inclusive")}
        others = [f for f in d.functions if not (planted and (f.function, f.mode) in moved)]
        c[0] += any(f.claimed and f.mode == "self" for f in others)
        c[1] += any(f.claimed for f in others)
        selfrows = [f for f in d.functions if f.mode == "self"]
        c[2] += bool(selfrows and selfrows[0].claimed)
        first = d.claimed("self")
        c[3] += bool(first and first[0].function == PLANTED)
        self.rounds.setdefault(procedure, []).append(d.n_a)
        self.stopped[procedure] = self.stopped.get(procedure, 0) + (d.n_a < last)


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


def synthetic_sides(rng: np.random.Generator, k: int, cv: float, rounds: int, plant: float = 0.0):
    """A's and B's trials; B's f1 costs `plant` (a share of the mean CPU time per trial) more."""
    stacks, shares = program(k)
    mean_s = shares * rng.uniform(0.5, 1.0)
    mean_b = mean_s.copy()
    mean_b[1] += plant * mean_s.sum()
    side = [[synthetic_trial(rng, stacks, m, cv, r) for r in range(rounds)] for m in (mean_s, mean_b)]
    return side[0], side[1]


def pool_sides(rng: random.Random, pool: list[ProfiledTrial], rounds: int):
    draw = rng.sample(pool, 2 * rounds)
    a = [ProfiledTrial(r, t.folded, t.cpu_s) for r, t in enumerate(draw[:rounds])]
    b = [ProfiledTrial(r, t.folded, t.cpu_s) for r, t in enumerate(draw[rounds:])]
    return a, b


def procedure(a: list[ProfiledTrial], b: list[ProfiledTrial], schedule: tuple[int, ...], level: str, memo):
    """The comparison a run ends with: the first of `schedule`'s looks (before its last) whose top function
    is decided, else the last. `level`: "α" at every look; "product", each look's share of α as the product
    gives it (compare_profiles(looks=...)); "equal", α / L at every look (the split the product does not take)."""

    def at(n: int) -> AttributionDiff:
        key = (n, level, schedule if level != "α" else ())
        if key not in memo:
            if level == "equal":
                memo[key] = compare_profiles(a[:n], b[:n], alpha=ALPHA / len(schedule))
            else:
                memo[key] = compare_profiles(a[:n], b[:n], looks=key[2])
        return memo[key]

    return next((at(n) for n in schedule[:-1] if top_decided(at(n))), at(schedule[-1]))


def new_schedule(m: int) -> tuple[int, ...]:
    """The product's looks, read off its own stop: the rounds after which may_stop asks, and the last."""
    policy = RunPolicy(profiled_trials=PROFILED_TRIALS, max_profiled=m)
    asked = tuple(n for n in range(1, m) if may_stop(_CpuProfiler(), policy, n))  # type: ignore[arg-type]
    assert (*asked, m) == looks(policy)
    return looks(policy)


def replay(
    tally: Tally, a: list[ProfiledTrial], b: list[ProfiledTrial], maxes: list[int], planted: bool
) -> None:
    """One replication: each procedure read off the same trials (a prefix compared once per level)."""
    memo: dict[tuple[int, str, tuple[int, ...]], AttributionDiff] = {}
    tally.reps += 1
    tally.add(f"fixed {MIN_DECIDE}", procedure(a, b, (MIN_DECIDE,), "α", memo), planted, MIN_DECIDE)
    for m in maxes:
        old, new = legacy_looks(PROFILED_TRIALS, m), new_schedule(m)
        tally.add(f"every round ≤{m}", procedure(a, b, old, "α", memo), planted, m)
        tally.add(f"looks ≤{m}", procedure(a, b, new, "product", memo), planted, m)
        tally.add(f"equal split ≤{m}", procedure(a, b, new, "equal", memo), planted, m)
        tally.add(f"fixed {m}", procedure(a, b, (m,), "α", memo), planted, m)


def report(label: str, tally: Tally, maxes: list[int], planted: bool) -> None:
    order = [f"fixed {MIN_DECIDE}"] + [
        p for m in maxes for p in (f"every round ≤{m}", f"looks ≤{m}", f"equal split ≤{m}", f"fixed {m}")
    ]
    print(f"{label}: {tally.reps} replications")
    for p in order:
        cells = []
        for k in tally.counts[p][:4] if planted else tally.counts[p][:3]:
            lo, hi = wilson(k, tally.reps)
            cells.append(f"{100 * k / tally.reps:5.1f}% ({100 * lo:.1f}-{100 * hi:.1f})")
        rounds = tally.rounds[p]
        stopped = tally.stopped[p] / len(rounds)
        cells.append(f"{sum(rounds) / len(rounds):4.1f} a side, {100 * stopped:4.1f}% before the last")
        print(f"  | {p:<16} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


def synthetic(reps: int, ks: list[int], cvs: list[float], maxes: list[int], plant: float) -> None:
    for k in ks:
        for cv in cvs:
            rng = np.random.default_rng([SEED, k, round(cv * 1000)] + ([round(plant * 1e4)] if plant else []))
            tally = Tally()
            for _ in range(reps):
                replay(tally, *synthetic_sides(rng, k, cv, max(maxes), plant), maxes, plant > 0)
            what = f", B's f1 +{100 * plant:g}% of the CPU" if plant else ""
            report(f"synthetic, {k} functions, CV {100 * cv:.0f}%{what}", tally, maxes, plant > 0)


def recorded(store_url: str | None, reps: int, maxes: list[int]) -> None:
    import explain_validation  # bench/: its A/A pool (records one when no store is given)

    with tempfile.TemporaryDirectory() as tmp:
        pool = explain_validation.aa_pool(Path(tmp), store_url)
    maxes = [m for m in maxes if 2 * m <= len(pool)]
    if not maxes:
        raise SystemExit(f"the pool has {len(pool)} profiled trials: too few for 2 x max_profiled")
    rng, tally = random.Random(SEED), Tally()
    for _ in range(reps):
        replay(tally, *pool_sides(rng, pool, max(maxes)), maxes, False)
    report(f"recorded A/A pool ({len(pool)} profiled trials)", tally, maxes, False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--functions", default="6,11", help="leaf functions of the synthetic program")
    ap.add_argument("--cv", default="2,5,8", help="per-function CV per trial, percent")
    ap.add_argument("--max", default="16,20", help="max_profiled (plan default 20; the tests' plans 16)")
    ap.add_argument("--aa-store", help="sqlite:///PATH of recorded A/A runs (explain_validation's pool)")
    ap.add_argument("--record", action="store_true", help="record explain_validation's A/A pool and use it")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--plant", type=float, default=0.0, help="B's f1 costs this % of the CPU time more")
    _commit.add_option(ap)
    args = ap.parse_args()
    maxes = sorted(int(m) for m in args.max.split(","))
    t0, load0 = time.time(), os.getloadavg()[0]
    plant = args.plant / 100
    print(
        "claims among replications: any self row | any row (self or inclusive) | the top self row"
        + (" (the first two: rows that do not differ) | f1 named first" if plant else "")
        + " | trials a side the run ended with, on average"
    )
    if not args.no_synthetic:
        cvs = [float(c) / 100 for c in args.cv.split(",")]
        synthetic(args.reps, [int(k) for k in args.functions.split(",")], cvs, maxes, plant)
    if args.aa_store or args.record:
        recorded(args.aa_store, args.reps, maxes)
    print(
        f"{_commit.commit(args.commit)}, {time.time() - t0:.0f} s, load average {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
