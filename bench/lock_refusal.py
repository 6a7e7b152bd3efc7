"""How long `fairmark run` takes to say no when another run holds the host lock (issue 31 item 2).

The lock is held by this process (run/lock.HostLock, as a run holds it); each command is started STARTS times, in
turns, and its wall and CPU time (user + sys, from wait4) taken; medians are printed, next to `python -c pass` and
`fairmark --version` (the floor of any fairmark command). Goal: a refused run < 0.3 s on an idle machine. This VM
is shared and often loaded, so wall times stretch with the neighbours: CPU time is what travels to an idle machine
(wall ≈ CPU there), and the ratios to the floors are what travel from a busy machine to a quiet one. The load
average is printed at the start and the end.

Run: .venv/bin/python bench/lock_refusal.py
     .venv/bin/python bench/lock_refusal.py --against OTHER/src   also an older fairmark (e.g. `git archive
     COMMIT src | tar -x -C OTHER`), in the same turns: its refusal, which came after the run's imports
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairmark.run.guard.lock import HostLock

STARTS = 9
PLAN = '[[workload]]\nname = "nap"\ncommand = ["sleep", "0.1"]\n[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'


def timed(argv: list[str], env: dict[str, str], expect: int) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys) of one command, which must exit with `expect`."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != expect:
        sys.exit(f"{' '.join(argv)}: exit {code}, expected {expect}: {err.decode(errors='replace')[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--against", type=Path, help="another fairmark's src/ directory, measured in the same turns"
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-bench-lock-"))
    plan = tmp / "plan.toml"
    plan.write_text(PLAN)
    # As installed: compiled bytecode (a checkout run with PYTHONDONTWRITEBYTECODE compiles ~40 modules, 0.1 s of
    # CPU, at every start, and the refusal would carry it)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "src" / "fairmark"), quiet=1)
    if args.against:
        compileall.compile_dir(str(args.against / "fairmark"), quiet=1)
    env = base | {"FAIRMARK_LOCK_PATH": str(tmp / "host.lock"), "FAIRMARK_STORE": str(tmp / "store.db")}
    env |= {"FAIRMARK_STATE_DIR": str(tmp / "state")}
    os.environ["FAIRMARK_LOCK_PATH"] = env[
        "FAIRMARK_LOCK_PATH"
    ]  # the lock this process holds: the commands' own
    here = str(Path(__file__).resolve().parent.parent / "src")
    commands = {
        "python -c pass": ([sys.executable, "-c", "pass"], env, 0),
        "fairmark --version": (
            [sys.executable, "-m", "fairmark", "--version"],
            env | {"PYTHONPATH": here},
            0,
        ),
        "fairmark run (refused)": (
            [sys.executable, "-m", "fairmark", "run", str(plan)],
            env | {"PYTHONPATH": here},
            3,
        ),
    }
    if args.against:
        old = [sys.executable, "-m", "fairmark", "run", str(plan)]
        commands["older fairmark run (refused)"] = (old, env | {"PYTHONPATH": str(args.against.resolve())}, 3)
    print(
        f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)"
    )
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    with HostLock({"plan": "bench.toml", "run_id": "bench"}):
        for _ in range(STARTS):
            for name, (argv, cmd_env, expect) in commands.items():
                times[name].append(timed(argv, cmd_env, expect))
    print(f"load average at the end:   {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\nmedian of {STARTS} starts each, in turns       wall s    CPU s")
    med = {
        n: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for n, t in times.items()
    }
    for name, (wall, cpu) in med.items():
        print(f"  {name:<38} {wall:7.3f}  {cpu:7.3f}")
    refused = med["fairmark run (refused)"]
    floor = med["fairmark --version"]
    print(
        f"\nrefused run / fairmark --version: wall {refused[0] / floor[0]:.2f}×, CPU {refused[1] / floor[1]:.2f}×"
    )
    if args.against:
        old_med = med["older fairmark run (refused)"]
        print(
            f"refused run / older refused run:  wall {refused[0] / old_med[0]:.2f}×, CPU {refused[1] / old_med[1]:.2f}×"
        )
    verdict = "met" if refused[1] < 0.3 else "NOT met"
    print(f"goal < 0.3 s on an idle machine (where wall ≈ CPU): {refused[1]:.3f} s of CPU — {verdict}")


if __name__ == "__main__":
    main()
