"""Issue 35's validation of "where the difference went" (stats/attribution_diff.py, report/explain.py).

    .venv/bin/python bench/explain_validation.py                  (`make bench`: A/A, perf diff, cost; ~3 min)
    .venv/bin/python bench/explain_validation.py --planted-runs 10  (+ 10 planted runs through `fairmark run`)
    .venv/bin/python bench/explain_validation.py --aa-store DB --aa-reps 1000

1. Planted function (--planted-runs N): a C program built here with frame pointers; B calls planted_extra, a
   tenth of main_work's loop. N runs of `fairmark run --profile cpu` (adaptive profiled rounds): per run the
   function claimed first (at the report's level: its look's share of α, stats/profile_looks.py), its difference
   B - A per trial and interval, and the profiled trials a side the run took; the reference: planted_extra's CPU
   time as the program measured it around the call (its own thread clock, printed on stdout), mean over B's
   profiled trials, with whether the interval covers it. Also shown: main_work / 10 (the former reference,
   which assumed the two loops run at the same speed in every trial: they do not, see docs/reproductions.md
   section 15) and the estimator's error per trial against the program's own clock.
2. A/A on recorded profiles: the profiled trials of one program on both sides of a `fairmark run` (two identical
   variants, 30 profiled rounds, or --aa-store's runs) are pooled; each replication draws n + n of them without
   replacement, pairs them by round and runs compare_profiles (the report's own code). The share of
   replications in which no function is claimed (self and inclusive), per n.
3. Against `perf diff`: perf.data files recorded here (perf record -e cpu-clock -g, the process's CPU time from
   its rusage), folded by the collapser fairmark uses, for the planted program and for glibc malloc debugging;
   fairmark's claims over the 8 + 8 trials against `perf diff` of each of the 8 (A_i, B_i) pairs: for each
   function both name, whether the signs agree; for each function `perf diff` moves by >= 1 point in some pair
   that fairmark does not claim, whether fairmark's interval includes 0.
4. Cost: compare_profiles of 30 profiled trials x 2 cells (the pooled A/A trials, drawn with replacement when
   fewer), median of 5.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairmark.stats.attribution_diff import ProfiledTrial, compare_profiles, trial_times

FAIRMARK = str(Path(sys.executable).with_name("fairmark"))

# the planted program (its two modes: a trial, and the slices), shared with the tests
PLANTED_C = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "planted.c"
PROGRAM = PLANTED_C.read_text()

ALLOC = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    void *pool[1024] = {0};
    unsigned x = 12345, sum = 0;
    for (long i = 0; i < 1000000; i++) {
        x = x * 1103515245u + 12345u;
        unsigned slot = (x >> 8) & 1023, size = 16 + ((x >> 18) & 1023);
        free(pool[slot]);
        pool[slot] = malloc(size);
        ((unsigned char *)pool[slot])[size - 1] = (unsigned char)i;
        sum += ((unsigned char *)pool[slot])[size - 1];
    }
    printf("%u\n", sum);
    return 0;
}
"""
DEBUG_ENV = {
    "LD_PRELOAD": "libc_malloc_debug.so.0",
    "GLIBC_TUNABLES": "glibc.malloc.check=3:glibc.malloc.perturb=165",
}

PLAN = """
[run]
warmup = 0
min_trials = {measured}
max_trials = {measured}
profiled_trials = {profiled}
max_profiled = {max_profiled}

[[workload]]
name = "planted"
command = ["{exe}"]
metrics = [{{ name = "cpu_s" }}]

[[variant]]
name = "A"

[[variant]]
name = "B"
{b_env}
"""


def build(tmp: Path, name: str, source: str) -> Path:
    src, exe = tmp / f"{name}.c", tmp / name
    src.write_text(source)
    flags = ["-O1", "-fno-omit-frame-pointer", "-fno-inline"]
    subprocess.run(["cc", *flags, "-o", str(exe), str(src)], check=True)
    return exe


def fairmark_run(plan: Path, store: str) -> str:
    args = [FAIRMARK, "run", str(plan), "--store", store, "--json", "--accept-risk", "--no-monitors"]
    args += ["--allow-concurrent", "--profile", "cpu"]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"fairmark run failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)["run"]["id"]


def stored_trials(store_url: str, run_id: str) -> dict[str, list[ProfiledTrial]]:
    """Each variant's profiled trials of the run, as the report reads them (report/explain.profiled_trials)."""
    from fairmark.report.explain import profiled_trials
    from fairmark.report.load import load_report
    from fairmark.store.db import Store

    report = load_report(Store.open(store_url), run_id)
    return {c.variant: profiled_trials(report, c) for c in report.cells}


def run_looks(store_url: str, run_id: str) -> tuple[int, ...]:
    """The looks the run's CPU-profiled rounds took: the report claims at the level of the one it stopped at."""
    from fairmark.report.explain import run_looks as looks_of
    from fairmark.store.db import Store

    return looks_of(Store.open(store_url).get_run(run_id).options)


# -- 1. planted ---------------------------------------------------------------------------------------------


def own_clock(store_url: str, run_id: str, variant: str) -> dict[int, list[float]]:
    """round -> [main_work, planted_extra] CPU seconds the program measured around each call (its own thread
    clock), of the variant's trials: profiled ones under their round, measured ones under round -1 - seq."""
    from fairmark.store.db import Store

    store = Store.open(store_url)
    cells = {c.id: c.variant for c in store.cells(run_id)}
    out = {}
    for t in store.trials(run_id):
        m = re.search(r"main_work_cpu_s=([\d.]+) planted_extra_cpu_s=([\d.]+)", t.stdout_tail)
        if t.status == "ok" and cells.get(t.cell_id) == variant and m and t.round >= 0:
            out[t.round if t.profiled else -1 - t.seq] = [float(m[1]), float(m[2])]
    return out


def slices(tmp: Path) -> None:
    """20 slices of 15 M iterations of each loop, alternately: ns per iteration on the thread's CPU clock."""
    out = subprocess.run(
        [str(build(tmp, "slices", PROGRAM)), "slices"], capture_output=True, text=True, check=True
    ).stdout
    rows = [tuple(map(float, line.split())) for line in out.splitlines()]
    for k, name in enumerate(("main_work", "planted_extra")):
        ns = sorted(r[k] for r in rows)
        print(
            f"   {name:<14} ns per iteration over {len(ns)} slices of 15 M: min {ns[0]:.2f}, median "
            f"{statistics.median(ns):.2f}, mean {statistics.mean(ns):.2f}, max {ns[-1]:.2f}"
        )


def planted(tmp: Path, runs: int) -> None:
    exe = build(tmp, "planted", PROGRAM)
    plan = tmp / "planted.toml"
    plan.write_text(
        PLAN.format(exe=exe, measured=6, profiled=3, max_profiled=16, b_env='env = { PLANT = "10" }')
    )
    store = f"sqlite:///{tmp / 'planted.db'}"
    print(
        f"1. planted function: {runs} runs of `fairmark run --profile cpu` (profiled_trials 3, max_profiled 16)\n"
        "   own clock: planted_extra's CPU time measured by the program around the call (CLOCK_THREAD_CPUTIME_ID),\n"
        "   mean over B's profiled trials; main/10: B's main_work self time / 10 (the former reference)"
    )
    print(
        f"{'run':>3} {'n':>2}  {'first claimed':<14} {'B-A ms':>6}  {'interval ms':<14} {'own clock':>9} cov "
        f"{'main/10':>7} cov"
    )
    rows, errors, every, sides = [], [], [], []
    for i in range(runs):
        run_id = fairmark_run(plan, store)
        trials = stored_trials(store, run_id)
        d = compare_profiles(trials["A"], trials["B"], looks=run_looks(store, run_id))  # the report's level
        assert d is not None
        clock = own_clock(store, run_id, "B")
        every += [v[1] for v in clock.values()]
        used = [t for t in trials["B"] if t.round in clock]
        for t in used:  # the estimator per trial: share of the samples x the trial's CPU time
            est = trial_times(t).get(("planted_extra", "user", "self"), 0.0)
            errors.append((est - clock[t.round][1], est, clock[t.round][1]))
        own = statistics.mean(clock[t.round][1] for t in used)
        top = d.claimed("self")[0] if d.claimed("self") else None
        main = next(f for f in d.functions if f.mode == "self" and f.function == "main_work")
        rows.append(_planted_row(i + 1, d.n_a, top, own, main.b_s / 10))
        sides.append(d.n_a)
    _planted_summary(rows, errors, every, sides)


def _covers(top, value: float) -> bool:
    return top is not None and top.function == "planted_extra" and top.low_s <= value <= top.high_s


def _planted_row(i: int, n: int, top, own: float, model: float) -> tuple[bool, bool, bool, object]:
    name = top.function if top else "(none)"
    diff = f"{top.diff_s * 1e3:+6.1f}" if top else "     —"
    interval = f"{top.low_s * 1e3:+.1f} to {top.high_s * 1e3:+.1f}" if top else "—"
    yes = {True: "yes", False: "NO"}
    print(
        f"{i:>3} {n:>2}  {name:<14} {diff}  {interval:<14} {own * 1e3:>9.1f} {yes[_covers(top, own)]:<3} "
        f"{model * 1e3:>7.1f} {yes[_covers(top, model)]}"
    )
    return (top is not None and top.function == "planted_extra", _covers(top, own), _covers(top, model), top)


def _planted_summary(rows, errors, every: list[float], sides: list[int]) -> None:
    runs = len(rows)
    mean_all = statistics.mean(every)
    print(
        f"named first: {sum(r[0] for r in rows)} of {runs}; interval covers planted_extra's own-clock CPU time "
        f"in the same trials: {sum(r[1] for r in rows)} of {runs}; covers main_work / 10: "
        f"{sum(r[2] for r in rows)} of {runs}"
    )
    print(f"  profiled trials a side: mean {statistics.mean(sides):.1f}, range {min(sides)}-{max(sides)}")
    print(
        f"  planted_extra's own clock over all {len(every)} B trials of the sitting (measured and profiled): "
        f"mean {mean_all * 1e3:.1f} ms, median {statistics.median(every) * 1e3:.1f}, "
        f"range {min(every) * 1e3:.1f}-{max(every) * 1e3:.1f}; intervals covering that mean: "
        f"{sum(_covers(r[3], mean_all) for r in rows)} of {runs}"
    )
    diffs = sorted(e[0] * 1e3 for e in errors)
    rel = sum(e[1] for e in errors) / sum(e[2] for e in errors) - 1
    print(
        f"  the estimator per profiled B trial (share of samples x rusage CPU) - own clock: median "
        f"{statistics.median(diffs):+.2f} ms, range {diffs[0]:+.1f} to {diffs[-1]:+.1f} over {len(diffs)} "
        f"trials; summed over them {100 * rel:+.1f}%\n"
    )


# -- 2. A/A ------------------------------------------------------------------------------------------------


def aa_pool(tmp: Path, store_url: str | None) -> list[ProfiledTrial]:
    if store_url is None:  # record: the planted program with no plant on either side, 30 profiled rounds
        exe = build(tmp, "aa", PROGRAM)
        plan = tmp / "aa.toml"
        plan.write_text(PLAN.format(exe=exe, measured=3, profiled=30, max_profiled=30, b_env=""))
        store_url = f"sqlite:///{tmp / 'aa.db'}"
        fairmark_run(plan, store_url)
    from fairmark.store.db import Store

    store = Store.open(store_url)
    pool: list[ProfiledTrial] = []
    for run in store.list_runs(1000):
        for trials in stored_trials(store_url, run["id"]).values():
            pool += trials
    return pool


def aa(pool: list[ProfiledTrial], reps: int) -> list[tuple[int, float, float, int]]:
    rng = random.Random(35)
    rows = []
    print(f"2. A/A: {len(pool)} recorded profiled trials pooled; {reps} replications per n (seed 35)")
    print(f"{'n a side':>8}  {'no self claim':>13}  {'no claim at all':>15}  functions tested (median)")
    for n in (3, 5, 8, 15):
        if 2 * n > len(pool):
            continue
        none_self = none_any = 0
        tested = []
        for _ in range(reps):
            draw = rng.sample(pool, 2 * n)
            a = [ProfiledTrial(r, t.folded, t.cpu_s) for r, t in enumerate(draw[:n])]
            b = [ProfiledTrial(r, t.folded, t.cpu_s) for r, t in enumerate(draw[n:])]
            d = compare_profiles(a, b)
            assert d is not None
            none_self += not d.claimed("self")
            none_any += not any(f.claimed for f in d.functions)
            tested.append(d.tested)
        rows.append((n, none_self / reps, none_any / reps, int(statistics.median(tested))))
        print(
            f"{n:>8}  {100 * none_self / reps:>12.1f}%  {100 * none_any / reps:>14.1f}%  {statistics.median(tested):.0f}"
        )
    print()
    return rows


# -- 3. against perf diff ----------------------------------------------------------------------------------


def perf_record(exe: Path, out: Path, env: dict[str, str]) -> ProfiledTrial:
    times = out.with_suffix(".time")
    argv = ["perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", str(out), "--"]
    argv += ["/usr/bin/time", "-f", "%U %S", "-o", str(times), str(exe)]
    subprocess.run(argv, env=os.environ | env, check=True, capture_output=True)
    script = subprocess.run(
        ["perf", "script", "-i", str(out)], capture_output=True, text=True, check=True
    ).stdout
    from fairmark.run.profiles.cpu import collapser, fold

    tool = collapser()
    assert tool is not None, "no stack collapser (cargo install inferno)"
    folded = "".join(line + "\n" for line in fold(script, tool).splitlines() if not line.startswith("time;"))
    user, sys_ = map(float, times.read_text().split()[-2:])
    return ProfiledTrial(0, folded, user + sys_)


_DIFF = re.compile(
    r"^\s*(?:(?P<base>[\d.]+)%)?\s+(?P<delta>[+-][\d.]+)%\s+\S+\s+\[(?P<k>[.k])\]\s+(?P<sym>.+?)\s*$"
)


def perf_diff(a: Path, b: Path) -> dict[tuple[str, str], float]:
    """`perf diff A B`: each symbol's change of its share of the samples, in points (kernel marked)."""
    out = subprocess.run(["perf", "diff", str(a), str(b)], capture_output=True, text=True, check=True).stdout
    deltas = {}
    for line in out.splitlines():
        m = _DIFF.match(line)
        if m:
            deltas[(m["sym"], "kernel" if m["k"] == "k" else "user")] = float(m["delta"])
    return deltas


def against_perf_diff(tmp: Path, n: int = 8) -> list[ProfiledTrial]:
    cases = [
        ("planted", build(tmp, "pd_planted", PROGRAM), {}, {"PLANT": "10"}),
        ("malloc debugging", build(tmp, "pd_alloc", ALLOC), {}, DEBUG_ENV),
    ]
    print(f"3. against `perf diff`: {n} + {n} perf.data files per case, interleaved A B A B …")
    recorded: list[ProfiledTrial] = []
    for name, exe, env_a, env_b in cases:
        sides: dict[str, list[ProfiledTrial]] = {"A": [], "B": []}
        files: dict[str, list[Path]] = {"A": [], "B": []}
        for r in range(n):
            for side, env in (("A", env_a), ("B", env_b)):
                path = tmp / f"{name[:4]}-{side}{r}.data"
                t = perf_record(exe, path, env)
                sides[side].append(ProfiledTrial(r, t.folded, t.cpu_s))
                files[side].append(path)
        d = compare_profiles(sides["A"], sides["B"])
        assert d is not None
        diffs = [perf_diff(a, b) for a, b in zip(files["A"], files["B"], strict=True)]
        _agreement(name, d, diffs)
        recorded += sides["A"] + sides["B"]
    print()
    return recorded


def _agreement(name: str, d, diffs: list[dict[tuple[str, str], float]]) -> None:
    rows = {(f.function, f.space): f for f in d.functions if f.mode == "self"}
    claimed = [f for f in rows.values() if f.claimed]
    same = total = 0
    against: dict[str, int] = {}
    for f in claimed:
        for pd in diffs:
            if (f.function, f.space) in pd:
                total += 1
                agree = (pd[(f.function, f.space)] > 0) == (f.diff_s > 0)
                same += agree
                if not agree:
                    against[f.function] = against.get(f.function, 0) + 1
    for fn, k in sorted(against.items(), key=lambda x: -x[1]):
        f = next(f for f in claimed if f.function == fn)
        share = (f.a_s / d.cpu_a_s, f.b_s / d.cpu_b_s)
        print(
            f"      opposite in {k} pair(s): {fn}, fairmark {f.diff_s * 1e3:+.1f} ms per trial; its share of the "
            f"CPU time {100 * share[0]:.1f}% -> {100 * share[1]:.1f}%"
        )
    moved = {k for pd in diffs for k, v in pd.items() if abs(v) >= 1.0}
    unclaimed = [rows[k] for k in moved if k in rows and not rows[k].claimed]
    zero = sum(f.low_s <= 0 <= f.high_s for f in unclaimed)
    print(
        f"  {name}: fairmark claims {len(claimed)} of {d.tested} functions; same sign as perf diff in {same} of "
        f"{total} (function, pair) cases where both name it"
    )
    print(
        f"    perf diff moves {len(moved)} symbols by >= 1 point in some pair; {len(unclaimed)} of them tested "
        f"and not claimed by fairmark, whose interval includes 0 for {zero} of {len(unclaimed)}"
    )
    for f in sorted(unclaimed, key=lambda f: -max(abs(pd.get((f.function, f.space), 0.0)) for pd in diffs))[
        :3
    ]:
        worst = max((pd.get((f.function, f.space), 0.0) for pd in diffs), key=abs)
        print(
            f"      {f.function}: perf diff up to {worst:+.1f} points; fairmark {f.diff_s * 1e3:+.1f} ms "
            f"({f.low_s * 1e3:+.1f} to {f.high_s * 1e3:+.1f})"
        )


# -- 4. cost -----------------------------------------------------------------------------------------------


def cost(pool: list[ProfiledTrial]) -> None:
    rng = random.Random(4)
    a = [ProfiledTrial(r, rng.choice(pool).folded, rng.choice(pool).cpu_s) for r in range(30)]
    b = [ProfiledTrial(r, rng.choice(pool).folded, rng.choice(pool).cpu_s) for r in range(30)]
    lines = sum(len(t.folded.splitlines()) for t in a + b)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        compare_profiles(a, b)
        times.append(time.perf_counter() - t0)
    print(
        f"4. cost: compare_profiles of 30 + 30 profiled trials ({lines} folded lines): "
        f"median {statistics.median(times):.3f} s of 5 (limit 2 s)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--planted-runs", type=int, default=0)
    p.add_argument("--slices", action="store_true", help="only the two loops' speed, slice by slice")
    p.add_argument("--aa-store", help="sqlite:///PATH of A/A runs with profiled trials (default: record one)")
    p.add_argument("--aa-reps", type=int, default=1000)
    p.add_argument("--cost-store", help="sqlite:///PATH: part 4 also on the profiled trials of its runs")
    p.add_argument("--no-perf-diff", action="store_true")
    p.add_argument(
        "--no-aa", action="store_true", help="skip part 2 (part 4 then draws from part 3's trials)"
    )
    args = p.parse_args()
    if shutil.which("perf") is None or shutil.which("cc") is None:
        print("skipped: needs perf and a C compiler")
        return
    with tempfile.TemporaryDirectory(prefix="fairmark-explain-") as tmp:
        if args.slices:
            print("0. the planted program's two loops, alternately (CLOCK_THREAD_CPUTIME_ID)")
            slices(Path(tmp))
            return
        if args.planted_runs:
            planted(Path(tmp), args.planted_runs)
        pool = [] if args.no_aa else aa_pool(Path(tmp), args.aa_store)
        if pool:
            aa(pool, args.aa_reps)
        if not args.no_perf_diff:
            pool += against_perf_diff(Path(tmp))
        if pool:
            cost(pool)
        if args.cost_store:
            from fairmark.store.db import Store

            for run in Store.open(args.cost_store).list_runs(1000):
                cost([t for ts in stored_trials(args.cost_store, run["id"]).values() for t in ts])


if __name__ == "__main__":
    main()
