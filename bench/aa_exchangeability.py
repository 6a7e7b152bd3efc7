"""Whether the two cells of stored A/A runs are exchangeable (issue 39): the evidence behind an A/A rate.

    .venv/bin/python bench/aa_exchangeability.py STORE.db ... [--blocks 12] [--trace FTRACE.txt]
    .venv/bin/python bench/aa_exchangeability.py          (`make bench`: one 300-round A/A run of the issue's
                                                          pipeline, monitors on, in a store of its own)

STORE.db: a SQLite store of A/A runs (`calibrate`'s: a baseline and its twin, "NAME.aa"), long ones (say 300
rounds a side) for the block figures. Prints, from the store alone:

1. each trial's log deviation from its run's median, by position in its round (first/second), by whether the
   trial before it was of the same cell, and by cell (B: baseline, T: twin): a harness that treats the cells
   differently shows a difference between B and T in some context; and the mean log ratio of a round's second
   trial to its first (the position effect, which a random order within rounds turns into noise);
2. the gap between a trial's end and the next one's start (the harness's own work between them) by the cells
   of the two;
3. the verdict of each run's consecutive blocks of --blocks rounds (fairmark's own stats.compare, paired by
   round) with the real labels, and with each round's labels drawn afresh (20 times): exchangeable by
   construction — the statistics' own rate on this noise. More claims with the real labels than relabelled
   means the labels carry something the test does not expect.

Several stores: their runs together. With --trace (bench/aa_start_cpu.sh makes one), an ftrace text capture of the runs (events sched_process_fork with parent_comm launch-server*
or sh, sched_process_exec, sched_process_exit; one store run in it, the last store's last): the CPU each trial
started on (its command's exec), against the CPU of the trial before, its position and its cell.
"""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import math
import random
import re
import sqlite3
import statistics as st
import sys

QUERY = """select c.variant, t.round, t.wall_s, t.started_at from trials t join cells c on c.id = t.cell_id
           where t.run_id = ? and t.status = 'ok' order by t.seq"""


def runs(db: sqlite3.Connection) -> list[list[tuple[str, int, float, str]]]:
    ids = [r for (r,) in db.execute("select id from runs order by started_at")]
    found = [db.execute(QUERY, (r,)).fetchall() for r in ids]
    return [t for t in found if t]  # a run copied from a live store before its first trial


def mean_se(v: list[float]) -> str:
    return f"{100 * st.mean(v):+.2f}% ± {100 * st.stdev(v) / math.sqrt(len(v)):.2f} (n={len(v)})"


def contexts(all_runs: list[list[tuple[str, int, float, str]]]) -> None:
    acc: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    gaps: dict[str, list[float]] = collections.defaultdict(list)
    for t in all_runs:
        logs = [math.log(x[2]) for x in t]
        mid = st.median(logs)
        starts = [dt.datetime.fromisoformat(x[3]).timestamp() for x in t]
        for i in range(1, len(t)):
            cell = "T" if t[i][0].endswith(".aa") else "B"
            before = "T" if t[i - 1][0].endswith(".aa") else "B"
            gaps[f"{before}->{cell}"].append(1000 * (starts[i] - starts[i - 1] - t[i - 1][2]))
            if t[i][1] < 0:
                continue
            pos = "first" if t[i][1] != t[i - 1][1] else "second"
            same = "after same cell" if t[i][0] == t[i - 1][0] else "after other cell"
            acc[(pos, same, cell)].append(logs[i] - mid)
    print("log deviation from the run's median, by position, the trial before, cell:")
    for k, v in sorted(acc.items()):
        print(f"  {k[0]:<7}{k[1]:<18}{k[2]}  {mean_se(v)}")
    order = [math.log(b[2] / a[2]) for t in all_runs for a, b in itertools.pairwise(t) if a[1] == b[1] >= 0]
    if len(order) > 1:
        print(f"second trial of a round against its first, log ratio: {mean_se(order)}")
    print("gap between trials (ms), by the cells of the two: median")
    for k, v in sorted(gaps.items()):
        print(f"  {k}  {st.median(v):.2f} (n={len(v)})")


def verdict(a: list[float], b: list[float]) -> bool:
    from fairmark.verdict.compare import compare

    rounds = list(range(len(a)))
    kw = {"confidence": 95.0, "rounds": (rounds, rounds), "first_stage": len(a)}
    try:
        return bool(compare(a, b, length_planned=False, **kw).significant)  # type: ignore[arg-type]
    except TypeError:  # a tree before length_planned
        return bool(compare(a, b, **kw).significant)  # type: ignore[arg-type]


def blocks(all_runs: list[list[tuple[str, int, float, str]]], size: int) -> None:
    rng = random.Random(1)
    real = relabelled = n = nr = 0
    for t in all_runs:
        by: dict[int, list[tuple[bool, float]]] = {}
        for v, r, w, _ in t:
            if r >= 0:
                by.setdefault(r, []).append((v.endswith(".aa"), w))
        rounds = [sorted(by[r]) for r in sorted(by) if len(by[r]) == 2]  # (baseline, twin)
        for s in range(0, len(rounds) - size + 1, size):
            blk = rounds[s : s + size]
            real += verdict([p[0][1] for p in blk], [p[1][1] for p in blk])
            n += 1
            for _ in range(20):
                pairs = [(p[0][1], p[1][1]) if rng.random() < 0.5 else (p[1][1], p[0][1]) for p in blk]
                relabelled += verdict([x for x, _ in pairs], [y for _, y in pairs])
                nr += 1
    if n:
        print(
            f"blocks of {size} rounds called different: real labels {real}/{n} = {100 * real / n:.1f}%, "
            f"relabelled {relabelled}/{nr} = {100 * relabelled / nr:.2f}%"
        )


def trace(path: str, t: list[tuple[str, int, float, str]]) -> None:
    line = re.compile(r"\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)")
    events = [m.groups() for m in map(line.match, open(path)) if m]  # noqa: SIM115
    forks = collections.Counter(
        e[1] for e in events if e[4] == "sched_process_fork" and e[0].startswith("launch")
    )
    server = forks.most_common(1)[0][0]
    trials = [
        int(re.search(r"child_pid=(\d+)", e[5]).group(1))  # type: ignore[union-attr]
        for e in events
        if e[4] == "sched_process_fork" and e[1] == server
    ]
    exec_cpu = {
        int(re.search(r" pid=(\d+)", e[5]).group(1)): int(e[2])  # type: ignore[union-attr]
        for e in events
        if e[4] == "sched_process_exec"
    }
    cpus = [exec_cpu.get(pid) for pid in trials]
    print(f"{len(trials)} trials started by the launch server, {len(t)} in the store's last run")
    other = sum(1 for a, b in itertools.pairwise(cpus) if a is not None and b is not None and a != b)
    print(f"  started on the other CPU than the trial before: {other} of {len(cpus) - 1}")
    acc: dict[tuple[str, object], list[float]] = collections.defaultdict(list)
    logs = [math.log(x[2]) for x in t]
    mid = st.median(logs)
    for i, (x, cpu) in enumerate(zip(t, cpus, strict=False)):
        if x[1] < 0 or i == 0:
            continue
        pos = "first" if x[1] != t[i - 1][1] else "second"
        acc[("position", pos)].append(logs[i] - mid)
        acc[("start CPU", cpu)].append(logs[i] - mid)
        acc[("cell", "T" if x[0].endswith(".aa") else "B")].append(logs[i] - mid)
        acc[("position, start CPU", f"{pos} {cpu}")].append(logs[i] - mid)
    for k, v in sorted(acc.items(), key=str):
        print(f"  {k[0]:<20}{k[1]!s:<10}{mean_se(v)}")


PLAN = """[run]
warmup = 2
min_trials = 300
max_trials = 300
[[workload]]
name = "gz"
command = ["sh", "-c", "head -c 2000000 /dev/zero | gzip -1 > /dev/null"]
[[variant]]
name = "A1"
"""


def own_store(tmp: str) -> str:
    """One A/A run of PLAN (calibrate's: the baseline and its twin), monitors on, in a store under tmp."""
    from fairmark.assemble import RunRequest, execute_run
    from fairmark.cli.calibrate import aa_plan
    from fairmark.plan.load import LoadedPlan, load_plan
    from fairmark.store.db import Store

    path = f"{tmp}/gz.toml"
    with open(path, "w") as fh:
        fh.write(PLAN)
    loaded = load_plan(path)
    aa = LoadedPlan(plan=aa_plan(loaded.plan, loaded.path), path=loaded.path, text=loaded.text)
    db = f"{tmp}/aa.db"
    execute_run(RunRequest(aa, accept_risk=True, allow_concurrent=True), Store.open(f"sqlite:///{db}"))
    return db


def main() -> None:
    stores = [a for a in sys.argv[1:] if a.endswith(".db")]  # several: their runs together
    argv = [a for a in sys.argv[1:] if not a.endswith(".db")]
    if not stores:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="aa-exch-") as tmp:
            analyse([own_store(tmp)], argv)
        return
    analyse(stores, argv)


def analyse(stores: list[str], argv: list[str]) -> None:
    size = int(argv[argv.index("--blocks") + 1]) if "--blocks" in argv else 12
    all_runs = [r for store in stores for r in runs(sqlite3.connect(store))]
    contexts(all_runs)
    blocks(all_runs, size)
    if "--trace" in argv:
        trace(argv[argv.index("--trace") + 1], all_runs[-1])


if __name__ == "__main__":
    main()
