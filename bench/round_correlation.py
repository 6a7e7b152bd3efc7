"""Are the two trials of a round correlated on this machine, and which way? (issue 36)

    .venv/bin/python bench/round_correlation.py --out DIR [--runs K] [--rounds R] [--only NAME,...] [--stress]
    .venv/bin/python bench/round_correlation.py --summarize DIR ...

A decision stop that pools the variance of a round's sum s = a + b with that of its difference d = b − a (after
its order term) has 2n − 3 df instead of the paired t's n − 1, and reaches the trial goals of issue 36 — but it
holds its level only while Var(s) ≥ Var(d), i.e. while the two trials of a round are not negatively correlated:
Var(s) − Var(d) = 4·cov(a, b). A shared drift or a round effect makes the covariance positive (the pooled
variance then only errs on the safe side); a negative one has to come from something inside the round.

This script measures it on real interleaved A/A runs through fairmark's own harness (`calibrate`'s plan: the
baseline and an exact twin, rounds in twos, 2 warm-ups, R rounds a side; monitors on, the store's own). Each
command below is run K times (one run after another, each a fresh run with its own seed); with --stress, a
`stress-ng --cpu 2` runs beside the runs (the label gets "+stress"). Every run's store goes in DIR.

Per run, on the log wall times, the two trials of each round in time order (first, second):

* rho: the correlation of first and second across the rounds, after each cell's mean — the within-round
  correlation the pooled variance needs to be ≥ 0 (drift and round effects included);
* across: the same correlation of a round's second trial with the next round's first (lag 1 across a round's
  boundary): with a slow drift it equals rho; rho − across is the part the round itself adds;
* vd/vs: the variance of d after its order term (n − 2 df) over the variance of s (n − 1 df); above 1 where the
  pooled rule would be liberal (at rho 0 its median is about 1, an F ratio).

--summarize prints per command (and over all): runs, mean rho ± se (across runs), its 95% interval (t over
runs), the 10th percentile, the share of runs with rho < 0, mean across, mean rho − across, median vd/vs, and the
share of runs with vd > vs; and what independent trials would give (the same statistics on normal values, the
same round count, 20 000 simulated runs) to compare with.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fairmark.assemble import RunRequest, execute_run
from fairmark.cli.calibrate import aa_plan
from fairmark.plan.load import LoadedPlan, load_plan
from fairmark.store.db import Store

DATA_MB = 8


def commands(data: str) -> dict[str, list[str]]:
    """Short trials of several kinds: a process start, hashing and compressing a file, an interpreter loop."""
    return {
        "true": ["true"],
        "sha256sum": ["sha256sum", data],
        "openssl-sha256": ["openssl", "dgst", "-sha256", data],
        "zstd-1": ["sh", "-c", f"zstd -q -1 -c {data} > /dev/null"],
        "python-loop": [sys.executable, "-c", "s = 0\nfor i in range(400000): s += i"],
        "gzip-pipe": ["sh", "-c", "head -c 2000000 /dev/zero | gzip -1 > /dev/null"],
    }


PLAN = """[run]
warmup = 2
min_trials = {rounds}
max_trials = {rounds}
confidence = 95
[[workload]]
name = "{name}"
command = {command}
[[variant]]
name = "A1"
"""


def data_file(tmp: str) -> str:
    """DATA_MB of compressible text (base64 of seeded random bytes): the file the hashing commands read."""
    path = os.path.join(tmp, "data.txt")
    if not os.path.exists(path):
        import base64

        raw = np.random.default_rng(36).bytes(DATA_MB * 3 * 2**20 // 4)
        Path(path).write_bytes(base64.encodebytes(raw))
    return path


def one_run(name: str, command: list[str], rounds: int, store_path: str, tmp: str) -> None:
    plan_path = os.path.join(tmp, f"{name}.toml")
    Path(plan_path).write_text(PLAN.format(rounds=rounds, name=name, command=json.dumps(command)))
    loaded = load_plan(plan_path)
    aa = LoadedPlan(plan=aa_plan(loaded.plan, loaded.path), path=loaded.path, text=loaded.text)
    request = RunRequest(aa, accept_risk=True, allow_concurrent=True, hold_lock=False)
    execute_run(request, Store.open(f"sqlite:///{store_path}"))


def sweep(args: argparse.Namespace) -> None:
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="round-corr-")
    cmds = commands(data_file(tmp))
    names = args.only.split(",") if args.only else list(cmds)
    stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--quiet"]) if args.stress else None
    try:
        for k in range(args.runs):  # the commands take turns, so that each sees the same hours of the machine
            for name in names:
                label = f"{name}+stress" if args.stress else name
                store = os.path.join(args.out, f"{label}.db")
                t0, load0 = time.time(), os.getloadavg()[0]
                one_run(name, cmds[name], args.rounds, store, tmp)
                line = {
                    "label": label,
                    "k": k,
                    "dt": time.time() - t0,
                    "load0": load0,
                    "load1": os.getloadavg()[0],
                }
                with open(os.path.join(args.out, "runs.jsonl"), "a") as fh:
                    fh.write(json.dumps(line) + "\n")
    finally:
        if stress is not None:
            stress.terminate()
            stress.wait()


QUERY = """select c.variant, t.round, t.wall_s from trials t join cells c on c.id = t.cell_id
           where t.run_id = ? and t.status = 'ok' and not t.warmup and t.round >= 0 order by t.seq"""


def run_pairs(db: sqlite3.Connection) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per run: (first, second, twin-second) — the log wall times of each round's two trials in time order, and
    +1 where the twin ran second (the round's order)."""
    out = []
    for (run_id,) in db.execute("select id from runs order by started_at"):
        by: dict[int, list[tuple[str, float]]] = {}
        for variant, rnd, wall in db.execute(QUERY, (run_id,)):
            by.setdefault(rnd, []).append((variant, math.log(wall)))
        rounds = [by[r] for r in sorted(by) if len(by[r]) == 2]
        if len(rounds) < 6:
            continue
        first = np.array([r[0][1] for r in rounds])
        second = np.array([r[1][1] for r in rounds])
        order = np.array([1.0 if r[1][0].endswith(".aa") else -1.0 for r in rounds])
        out.append((first, second, order))
    return out


def stats_of(first: np.ndarray, second: np.ndarray, order: np.ndarray) -> tuple[float, float, float]:
    """(rho, across, vd/vs) of one run (see the module's docstring)."""
    # each cell's mean out: the cell at place p of round i is the twin where order says so
    twin_first = order < 0
    x1, x2 = first.copy(), second.copy()
    for place, is_twin in ((x1, twin_first), (x2, ~twin_first)):
        for cell in (is_twin, ~is_twin):
            if cell.any():
                place[cell] -= place[cell].mean()
    rho = float(np.corrcoef(x1, x2)[0, 1])
    across = float(np.corrcoef(x2[:-1], x1[1:])[0, 1])
    b = np.where(order > 0, second, first)  # the twin's value
    a = np.where(order > 0, first, second)
    d, s, n = b - a, a + b, first.size
    design = np.column_stack([np.ones(n), order])
    resid = d - design @ np.linalg.lstsq(design, d, rcond=None)[0]
    vd = float(resid @ resid) / (n - 2)
    return rho, across, vd / float(s.var(ddof=1))


def describe(label: str, rows: list[tuple[float, float, float]]) -> str:
    rho = np.array([r[0] for r in rows])
    across = np.array([r[1] for r in rows])
    ratio = np.array([r[2] for r in rows])
    m, se = float(rho.mean()), float(rho.std(ddof=1) / math.sqrt(rho.size)) if rho.size > 1 else math.nan
    from scipy import stats

    half = float(stats.t.ppf(0.975, rho.size - 1)) * se if rho.size > 1 else math.nan
    cells = [
        label,
        str(rho.size),
        f"{m:+.3f} ± {se:.3f}",
        f"[{m - half:+.3f}, {m + half:+.3f}]",
        f"{float(np.percentile(rho, 10)):+.2f}",
        f"{100 * float((rho < 0).mean()):.0f}%",
        f"{float(across.mean()):+.3f}",
        f"{float((rho - across).mean()):+.3f}",
        f"{float(np.median(ratio)):.2f}",
        f"{100 * float((ratio > 1).mean()):.0f}%",
    ]
    return "| " + " | ".join(cells) + " |"


def independent(rounds: int, runs: int = 20_000) -> list[tuple[float, float, float]]:
    """The same statistics on independent normal trials (rounds in twos), for comparison."""
    rng = np.random.default_rng(36)
    order = np.repeat(np.where(rng.random((runs, (rounds + 1) // 2)) < 0.5, 1.0, -1.0), 2, axis=1)[:, :rounds]
    order[:, 1::2] *= -1
    z = rng.standard_normal((2, runs, rounds))
    return [stats_of(z[0, i], z[1, i], order[i]) for i in range(runs)]


def summarize(dirs: list[str]) -> None:
    by: dict[str, list[tuple[float, float, float]]] = {}
    rounds: list[int] = []
    for d in dirs:
        for db in sorted(Path(d).glob("*.db")):
            for first, second, order in run_pairs(sqlite3.connect(db)):
                by.setdefault(db.stem, []).append(stats_of(first, second, order))
                rounds.append(first.size)
    head = [
        "command",
        "runs",
        "rho: mean ± se",
        "95% interval",
        "10th pct",
        "rho < 0",
        "across",
        "rho − across",
    ]
    head += ["vd/vs median", "vd > vs"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for label in sorted(by):
        print(describe(label, by[label]))
    everything = [r for rows in by.values() for r in rows]
    quiet = [r for label, rows in by.items() if "stress" not in label for r in rows]
    print(describe("all without stress", quiet))
    print(describe("all", everything))
    typical = int(st.median(rounds)) if rounds else 30
    print(describe(f"independent normal trials, {typical} rounds (simulated)", independent(typical)))
    loads = []
    for d in dirs:
        f = Path(d) / "runs.jsonl"
        if f.exists():
            loads += [json.loads(x) for x in f.read_text().splitlines() if x]
    if loads:
        l0 = [x["load0"] for x in loads]
        print(
            f"\n{len(loads)} runs; load average (1 min) at their starts {st.mean(l0):.1f} ({min(l0):.1f}–{max(l0):.1f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="a directory for the stores (a sweep)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--only", default="")
    ap.add_argument("--stress", action="store_true")
    ap.add_argument("--summarize", nargs="+", metavar="DIR")
    args = ap.parse_args()
    if args.summarize:
        summarize(args.summarize)
    elif args.out:
        sweep(args)
    else:
        ap.error("--out DIR or --summarize DIR ...")


if __name__ == "__main__":
    main()
