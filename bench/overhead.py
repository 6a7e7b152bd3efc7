"""fairmark's own cost, as ratios measured in one session (the machine is shared and noisy; ratios travel).

1. Per-trial overhead on `true`: fairmark's wall time per trial (end to end: spawn, wait4, store commit,
   progress) vs `hyperfine -N --runs 200 true` over the same 200 executions.
2. fairmark's own CPU time while a `sleep 10` trial runs (monitors on, as by default, and off).

Run: .venv/bin/python bench/overhead.py   (prints a small table; numbers go in docs/performance.md)
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 200


def fairmark(*args: str, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of fairmark and its children, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "fairmark", *args], env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        sys.exit(f"fairmark failed: {res.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, res.stdout


def plan(tmp: Path, command: list[str], trials: int) -> Path:
    p = tmp / f"plan-{command[0]}-{trials}.toml"
    p.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 0.0001\n"
        f"[[workload]]\nname = 'w'\ncommand = {json.dumps(command)}\n"
    )
    return p


def main() -> None:
    if not shutil.which("hyperfine"):
        sys.exit("hyperfine is not installed (make setup installs it)")
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-bench-"))
    env = os.environ | {
        "FAIRMARK_STORE": f"sqlite:///{tmp / 'b.db'}",
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "NO_COLOR": "1",
    }
    # Fixed costs (interpreter start, imports, environment probe, verdicts) measured with 3 trials and
    # subtracted, so what remains is the cost per trial.
    base_wall, _, _ = fairmark("run", str(plan(tmp, ["true"], 3)), "--no-monitors", "--json", env=env)
    wall, _, out = fairmark("run", str(plan(tmp, ["true"], RUNS + 3)), "--no-monitors", "--json", env=env)
    per_trial_fm = (wall - base_wall) / RUNS
    measured = json.loads(out)["cells"][0]["summaries"]["wall_s"]["mean"]

    hf_json = tmp / "hf.json"
    t0 = time.monotonic()
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(RUNS), "--export-json", str(hf_json), "true"],
        capture_output=True,
        check=True,
    )
    hf_wall = time.monotonic() - t0
    hf = json.loads(hf_json.read_text())["results"][0]
    per_trial_hf = hf_wall / RUNS

    sleeps = {}
    for label, flags in (("monitors on", []), ("monitors off", ["--no-monitors"])):
        w0, c0, _ = fairmark("run", str(plan(tmp, ["true"], 3)), *flags, "--json", env=env)
        w1, c1, _ = fairmark("run", str(plan(tmp, ["sleep", "10"], 3)), *flags, "--json", env=env)
        sleeps[label] = (c1 - c0) / (w1 - w0)  # CPU seconds fairmark spent per second of sleeping trial

    print(f"{'measure':58s} value")
    print(f"{'fairmark wall per trial of `true` (end to end)':58s} {per_trial_fm * 1e3:8.2f} ms")
    print(f"{'hyperfine -N wall per run of `true` (end to end)':58s} {per_trial_hf * 1e3:8.2f} ms")
    print(f"{'ratio fairmark / hyperfine, per-trial cost':58s} {per_trial_fm / per_trial_hf:8.2f}")
    print(f"{'mean wall_s fairmark measured for `true`':58s} {measured * 1e3:8.3f} ms")
    print(f"{'mean time hyperfine measured for `true`':58s} {hf['mean'] * 1e3:8.3f} ms")
    print(f"{'ratio of the measured times (fairmark / hyperfine)':58s} {measured / hf['mean']:8.2f}")
    for label, cpu_per_s in sleeps.items():
        print(f"{'fairmark CPU during a sleep 10 trial, ' + label:58s} {100 * cpu_per_s:8.2f} % of one CPU")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
