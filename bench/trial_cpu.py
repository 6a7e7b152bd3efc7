"""fairmark's own Python CPU per trial of `true`: the trial loop's (the runner thread's CPU time inside each
`Runner.trial`, as `time.thread_time` counts it: its syscalls included, the trial's processes not) and what the
end of the run adds per trial (the process's CPU after the last trial: verdicts, the report, the --json document;
the slope between a run of N1 and of N2 trials, so the imports cancel).

bench/harness_cost.py measures the whole (wall and CPU slopes of the process tree beside `hyperfine -N`); on a
busy machine its slopes swing by ±0.2 ms between repeats, more than a change of the harness's own work. This
measures only fairmark's own work, alternating between two source trees in one sitting, to tell such a change.

Run: .venv/bin/python bench/trial_cpu.py [--against OTHER/src] [--repeats 3] [--monitors]
     (this checkout's src against OTHER/src, e.g. a `git archive` of an older commit's src)
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

N1, N2 = 300, 1500

# Runs in the child: fairmark from SRC, Runner.trial and Runner._finish timed, the run as the CLI runs it.
CHILD = r"""
import json, os, sys, time
src, plan, out = sys.argv[1:4]
sys.path.insert(0, src)
from fairmark.run.loop import runner as R
acc = {"loop_s": 0.0, "trials": 0, "end_s": None}
trial, finish = R.Runner.trial, R.Runner._finish
def timed_trial(self, *a, **k):
    c0 = time.thread_time()
    try:
        return trial(self, *a, **k)
    finally:
        acc["loop_s"] += time.thread_time() - c0
        acc["trials"] += 1
def timed_finish(self, status):
    acc["end_s"] = time.process_time()
    return finish(self, status)
R.Runner.trial, R.Runner._finish = timed_trial, timed_finish
import atexit
@atexit.register
def _report():
    acc["after_s"] = time.process_time() - acc["end_s"]
    with open(out, "w") as fh:
        json.dump(acc, fh)
sys.argv = ["fairmark", "run", plan, "--json", *sys.argv[4:]]
from fairmark.cli.main import entry
entry()
"""


def one_run(src: str, trials: int, tmp: Path, monitors: bool) -> dict[str, float]:
    plan = tmp / f"plan-{trials}.toml"
    plan.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 0.0001\n"
        "[[workload]]\nname = 'w'\ncommand = ['true']\n"
    )
    out = tmp / "out.json"
    env = os.environ | {
        "FAIRMARK_STORE": f"sqlite:///{tmp / (Path(src).parent.name + '.db')}",
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }
    extra = [] if monitors else ["--no-monitors"]
    with open(tmp / "stderr", "w") as err:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, src, str(plan), str(out), *extra],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    if done.returncode != 0:
        sys.exit(f"the run of {src} failed ({done.returncode}): {(tmp / 'stderr').read_text()[-2000:]}")
    got = json.loads(out.read_text())
    return {"loop_us": 1e6 * got["loop_s"] / got["trials"], "after_s": got["after_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--against", metavar="OTHER/src", help="another tree to alternate with (`make bench`: none)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--monitors", action="store_true", help="monitors on (the default of a run)")
    args = ap.parse_args()
    trees = {"this checkout": str(Path(__file__).resolve().parent.parent / "src")}
    if args.against:
        trees["other"] = args.against
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-trial-cpu-"))
    loops: dict[str, list[float]] = {k: [] for k in trees}
    ends: dict[str, list[float]] = {k: [] for k in trees}
    load = [os.getloadavg()[0]]
    try:
        for _ in range(args.repeats):
            for label, src in trees.items():
                small, large = (one_run(src, n, tmp, args.monitors) for n in (N1, N2))
                loops[label] += [small["loop_us"], large["loop_us"]]
                ends[label].append(1e6 * (large["after_s"] - small["after_s"]) / (N2 - N1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load.append(os.getloadavg()[0])
    print(
        f"load average (1 min) {load[0]:.1f} → {load[1]:.1f} on {os.cpu_count()} CPUs; monitors {'on' if args.monitors else 'off'}"
    )
    print(
        f"fairmark's Python CPU per trial of `true` (median; {args.repeats} repeats of {N1} and {N2} trials):"
    )
    for label, src in trees.items():
        loop, end = statistics.median(loops[label]), statistics.median(ends[label])
        runs = ", ".join(f"{v:.0f}" for v in loops[label])
        print(f"  {label:14s} trial loop {loop:5.0f} µs [{runs}], end of run {end:4.0f} µs a trial  ({src})")
    print(json.dumps({"loop_us": loops, "end_us_per_trial": ends, "load": load}), file=sys.stderr)


if __name__ == "__main__":
    main()
