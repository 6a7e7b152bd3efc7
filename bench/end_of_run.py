"""What the end of a run costs per trial of `true`, stage by stage: its verdicts (the store's reads of the run's
trials and samples, the labelled values), the report's read model, its `to_dict()` and the --json document,
each timed by the thread's CPU (`time.thread_time`) on a stored run of N1 and of N2 trials; the per-trial cost
is the slope between them, so what does not grow with the trials cancels.

bench/trial_cpu.py measures the whole end of a run as the process's CPU after its last trial; under load its
per-trial slope swings by tens of µs between repeats (a fixed cost — scipy's import, the environment probes
after the run — that varies by a few tens of ms moves it), more than most changes of the end of the run. Here
each stage is timed alone, the best of a few passes, in processes that alternate between the two trees.

Run: .venv/bin/python bench/end_of_run.py [--against OTHER/src] [--repeats 3] [--trials 200,2000]
     (this checkout's src against OTHER/src, e.g. a `git archive` of an older commit's src; each tree runs
     its runs into a store of its own, so trees of different schema versions compare)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# Runs in the child: the stages of the end of a run, on the stored runs given, with fairmark from SRC.
CHILD = r"""
import io, json, sys, time
src, url, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, src)
from fairmark.console import console
from fairmark.report.load import load_report
from fairmark.report.jsondoc import run_json
from fairmark.store.db import Store
from fairmark.verdict.run import run_verdicts
store = Store.open(url)
runs = sys.argv[4:]
run_json(load_report(store, runs[0]))  # the imports, once
out = {}
for run_id in runs:
    best = {}
    for _ in range(passes):
        t = {}
        c = time.thread_time(); judged = run_verdicts(store, run_id); t["verdicts"] = time.thread_time() - c
        c = time.thread_time(); report = load_report(store, run_id, judged); t["report"] = time.thread_time() - c
        c = time.thread_time(); doc = run_json(report); t["to_dict"] = time.thread_time() - c
        stdout, sys.stdout = sys.stdout, io.StringIO()
        try:
            c = time.thread_time(); console.emit_json(doc); t["json"] = time.thread_time() - c
        finally:
            sys.stdout = stdout
        t["total"] = sum(t.values())
        best = {k: min(best.get(k, v), v) for k, v in t.items()}
    out[run_id] = best
print(json.dumps(out))
"""
STAGES = ("verdicts", "report", "to_dict", "json", "total")


def stored_run(src: str, url: str, trials: int, tmp: Path) -> str:
    """A run of `trials` trials of `true` stored by the tree at `src`: its id."""
    plan = tmp / f"plan-{trials}.toml"
    plan.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 0.0001\n"
        "[[workload]]\nname = 'w'\ncommand = ['true']\n"
    )
    env = os.environ | {
        "PYTHONPATH": src,
        "FAIRMARK_STORE": url,
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--no-monitors", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"the run of {trials} trials with {src} failed ({done.returncode}): {done.stderr[-2000:]}")
    return str(json.loads(done.stdout)["run"]["id"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--against", metavar="OTHER/src", help="another tree to alternate with (`make bench`: none)"
    )
    ap.add_argument("--repeats", type=int, default=3, help="processes per tree, alternating (median)")
    ap.add_argument("--passes", type=int, default=3, help="passes per process (best)")
    ap.add_argument("--trials", default="200,2000", metavar="N1,N2")
    args = ap.parse_args()
    n1, n2 = (int(n) for n in args.trials.split(","))
    trees = {"this checkout": str(Path(__file__).resolve().parent.parent / "src")}
    if args.against:
        trees["other"] = args.against
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-end-of-run-"))
    slopes: dict[str, dict[str, list[float]]] = {label: {s: [] for s in STAGES} for label in trees}
    load = [os.getloadavg()[0]]
    try:
        runs = {}
        for i, (label, src) in enumerate(trees.items()):
            url = f"sqlite:///{tmp / f'store-{i}.db'}"
            runs[label] = (url, [stored_run(src, url, n, tmp) for n in (n1, n2)])
        for _ in range(args.repeats):
            for label, src in trees.items():
                url, ids = runs[label]
                got = json.loads(
                    subprocess.run(
                        [sys.executable, "-c", CHILD, src, url, str(args.passes), *ids],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                )
                small, large = got[ids[0]], got[ids[1]]
                for s in STAGES:
                    slopes[label][s].append(1e6 * (large[s] - small[s]) / (n2 - n1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load.append(os.getloadavg()[0])
    print(f"load average (1 min) {load[0]:.1f} → {load[1]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"the end of a run, thread CPU per trial of `true` (slope {n1} → {n2} trials; median of {args.repeats}"
        f" processes, each the best of {args.passes} passes):"
    )
    for label, src in trees.items():
        parts = ", ".join(f"{s} {statistics.median(slopes[label][s]):.1f}" for s in STAGES[:-1])
        total = slopes[label]["total"]
        runs_text = ", ".join(f"{v:.1f}" for v in total)
        print(f"  {label:14s} {statistics.median(total):5.1f} µs a trial [{runs_text}] ({parts})  ({src})")
    print(json.dumps(slopes), file=sys.stderr)


if __name__ == "__main__":
    main()
