"""How light the harness is (issue 9), as figures measured in one run on this machine.

1. Marginal per-trial cost on `true`: the slope of fairmark's wall time between a plan of N1 and of N2 trials
   (fixed costs — interpreter start, imports, environment probe, verdicts — cancel), next to the same slope of
   `hyperfine -N --runs N` measured alternately in the same run. Monitors off (the floor) and on (the default).
2. Start of `fairmark --version`, `runs` and `doctor --help` (imports only: the doctor's probe itself is work,
   not start), next to `python -c pass`.
3. fairmark's own peak RSS during a run (wait4's maxrss of the fairmark process: the `true` trials it waits for
   are far smaller, so the maximum is fairmark's own).

Wall-time slopes are what the goal is stated in; on a busy machine they carry the neighbours' load, so the
CPU-time slopes (user + sys of the whole waited tree, from wait4) are printed beside them, and the load average.

Run: .venv/bin/python bench/harness_cost.py   (docs/performance.md quotes its output)
     .venv/bin/python bench/harness_cost.py --against OTHER/src   also runs the fairmark in OTHER/src (e.g. a
     copy of main's) alternately in the same run, monitors off and on: a change measured as a ratio on a busy
     machine
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# 200→1200: a 50→250 slope swung 0.8–2.2 ms between repeats of one configuration on a quiet machine
N1, N2, REPEATS = 200, 1200, 5
FAIRMARK = [sys.executable, "-m", "fairmark"]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (KiB) and CPU seconds (user + sys, children included) of one command; it must
    succeed."""
    with tempfile.TemporaryFile() as errf:  # a pipe read after the wait would fill up and stop the run
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=errf)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}): {err[-2000:]}")
    return wall, int(ru.ru_maxrss), ru.ru_utime + ru.ru_stime


def plan(tmp: Path, trials: int) -> Path:
    p = tmp / f"plan-{trials}.toml"
    p.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 0.0001\n"
        "[[workload]]\nname = 'w'\ncommand = ['true']\n"
    )
    return p


Slopes = dict[str, dict[str, list[float]]]  # label → {"wall": [...], "cpu": [...]}, seconds per trial


def slopes(tmp: Path, env: dict[str, str], against: str | None) -> tuple[Slopes, int]:
    # Each fairmark a store of its own: a store that grows by another configuration's trials (a monitored trial
    # stores its ~2.4 KB series) makes every later commit and checkpoint of the next one dearer.
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "fairmark, monitors off": (
            [*FAIRMARK, "run", "{plan}", "--no-monitors", "--json"],
            env | {"FAIRMARK_STORE": f"sqlite:///{tmp / 'off.db'}"},
        ),
        "fairmark, monitors on": (
            [*FAIRMARK, "run", "{plan}", "--json"],
            env | {"FAIRMARK_STORE": f"sqlite:///{tmp / 'on.db'}"},
        ),
    }
    if against:
        for mode, flags in (("off", ["--no-monitors"]), ("on", [])):
            commands[f"{against}, monitors {mode}"] = (
                [*FAIRMARK, "run", "{plan}", *flags, "--json"],
                # a store of its own: the other fairmark may write an older schema, and refuses a newer one
                env | {"PYTHONPATH": against, "FAIRMARK_STORE": f"sqlite:///{tmp / f'against-{mode}.db'}"},
            )
    commands["hyperfine -N"] = (["hyperfine", "-N", "--runs", "{n}", "true"], env)
    out: Slopes = {label: {"wall": [], "cpu": []} for label in commands}
    peak = 0
    for _ in range(REPEATS):
        for label, (argv, cmd_env) in commands.items():
            got = []
            for n in (N1, N2):
                args = [a.replace("{plan}", str(plan(tmp, n))).replace("{n}", str(n)) for a in argv]
                got.append(timed(args, cmd_env))
                if label.startswith("fairmark"):
                    peak = max(peak, got[-1][1])
            out[label]["wall"].append((got[1][0] - got[0][0]) / (N2 - N1))
            out[label]["cpu"].append((got[1][2] - got[0][2]) / (N2 - N1))
    return out, peak


def starts(env: dict[str, str]) -> dict[str, float]:
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "fairmark --version": [*FAIRMARK, "--version"],
        "fairmark runs": [*FAIRMARK, "runs"],
        "fairmark doctor --help": [*FAIRMARK, "doctor", "--help"],
    }
    return {k: statistics.median(timed(argv, env)[0] for _ in range(7)) for k, argv in cmds.items()}


def report(per_trial: Slopes) -> None:
    print(f"marginal cost per trial of `true` (slope {N1}→{N2} trials, median of {REPEATS}):")
    for kind in ("wall", "cpu"):
        hf = statistics.median(per_trial["hyperfine -N"][kind])
        print(f" {kind} time:")
        for label, by_kind in per_trial.items():
            values = by_kind[kind]
            med = statistics.median(values)
            extra = (
                ""
                if label == "hyperfine -N"
                else f"   − hyperfine {1e3 * (med - hf):+.2f} ms, ratio {med / hf:.2f}"
            )
            runs = ", ".join(f"{1e3 * v:.2f}" for v in values)
            print(f"  {label:24s} {1e3 * med:6.2f} ms  [{runs}]{extra}")


def main() -> None:
    against = None
    if sys.argv[1:2] == ["--against"] and len(sys.argv) == 3:
        against = str(Path(sys.argv[2]).resolve())
    elif sys.argv[1:]:
        sys.exit("usage: harness_cost.py [--against OTHER/src]")
    if not shutil.which("hyperfine"):
        sys.exit("hyperfine is not installed (make setup installs it)")
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-bench-"))
    env = os.environ | {
        "FAIRMARK_STORE": f"sqlite:///{tmp / 'b.db'}",
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }
    load = [os.getloadavg()[0]]
    try:
        per_trial, peak = slopes(tmp, env, against)
        load.append(os.getloadavg()[0])
        start = starts(
            env | {"FAIRMARK_STORE": f"sqlite:///{tmp / 'off.db'}"}
        )  # `runs`: the runs of the slopes
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"load average (1 min) at start {load[0]:.1f}, after the slopes {load[1]:.1f}, on {os.cpu_count()} CPUs"
    )
    report(per_trial)
    print("start (median of 7):")
    base = start["python -c pass"]
    for label, value in start.items():
        print(f"  {label:24s} {value:6.3f} s   ({value / base:.1f}× python -c pass; goal < 0.3 s)")
    print(
        f"peak RSS of fairmark during a run: {peak / 1024:.0f} MB (goal ≤ 150 MB, ratio {peak / 1024 / 150:.2f})"
    )
    print(json.dumps({"per_trial_s": per_trial, "start_s": start, "peak_rss_kib": peak}), file=sys.stderr)


if __name__ == "__main__":
    main()
