"""Start and memory (issue 24 item 5), as figures measured in one run on this machine.

1. Start of `fairmark --version`, `runs` (a store of a few runs), `history --help` and `history W` (a series of a few
   runs, no change point): median wall and CPU time of 7 starts each, next to `python -c pass` (the ratio is what
   travels from a busy machine to a quiet one). Goals: --version < 0.1 s, runs < 0.15 s.
2. Which heavy libraries each of those loads (a probe of sys.modules after the command, as
   tests/test_cli_imports.py does): history must not load scipy to start, nor for a series without a change point.
3. fairmark's own peak RSS during a 1200-trial run of `true` (wait4's maxrss of the fairmark process; the `true`
   trials are far smaller, and a vforked trial's high-water mark is fairmark's own): with --json, monitors on (the
   default) and off, and with the terminal report (which reads every trial's monitor series for the attribution
   line). Goal ≤ 100 MB.

The load average is printed at the start and the end: on this shared VM start times swing with the neighbours.

Run: .venv/bin/python bench/start_memory.py   (docs/performance.md quotes its output)
     .venv/bin/python bench/start_memory.py --against OTHER/src   also measures the fairmark in OTHER/src (e.g. an
     older commit's, from `git archive`) alternately in the same run: a change as a ratio on a busy machine
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FAIRMARK = [sys.executable, "-m", "fairmark"]
HEAVY = ("scipy", "numpy", "sqlalchemy", "pydantic", "matplotlib", "jinja2", "psycopg")
PROBE = """
import json, sys
from fairmark.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": [m for m in HEAVY if m in sys.modules]}), file=sys.stderr)
""".replace("HEAVY", repr(HEAVY))
STARTS = 7
BIG_RUN = 1200


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (KiB) of one command, which must succeed."""
    with tempfile.TemporaryFile() as errf:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=errf)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed: {err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, int(ru.ru_maxrss)


def plan(tmp: Path, trials: int) -> Path:
    p = tmp / f"plan-{trials}.toml"
    p.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 0.0001\n"
        "[[workload]]\nname = 'w'\ncommand = ['true']\n"
    )
    return p


def loaded(args: list[str], env: dict[str, str]) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(res.stderr.strip().splitlines()[-1])["loaded"]


def measure(tmp: Path, env: dict[str, str], sides: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Every figure for each side (its environment over `env`), the sides alternating measurement by measurement."""
    out: dict[str, Any] = {side: {"rss": {}, "start": {}, "loaded": {}} for side in sides}
    for label, extra in (
        ("--json, monitors on", ["--json"]),
        ("--json, monitors off", ["--json", "--no-monitors"]),
        ("terminal report, monitors on", []),
    ):
        for side, senv in sides.items():
            run = [*FAIRMARK, "run", str(plan(tmp, BIG_RUN)), *extra]
            out[side]["rss"][label] = timed(run, env | senv | {"FAIRMARK_STORE": store(tmp, side)})[2]
    for side, senv in sides.items():
        for _ in range(3):  # with the three above, a series of six runs for history
            timed(
                [*FAIRMARK, "run", str(plan(tmp, 10)), "--json", "--no-monitors"],
                env | senv | {"FAIRMARK_STORE": store(tmp, side)},
            )
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "fairmark --version": [*FAIRMARK, "--version"],
        "fairmark runs": [*FAIRMARK, "runs"],
        "fairmark history --help": [*FAIRMARK, "history", "--help"],
        "fairmark history w": [*FAIRMARK, "history", "w"],
    }
    for label, argv in cmds.items():
        got: dict[str, list[tuple[float, float, int]]] = {side: [] for side in sides}
        for _ in range(STARTS):
            for side, senv in sides.items():
                got[side].append(timed(argv, env | senv | {"FAIRMARK_STORE": store(tmp, side)}))
        for side in sides:
            g = got[side]
            out[side]["start"][label] = (
                statistics.median(x[0] for x in g),
                statistics.median(x[1] for x in g),
            )
            if argv[:3] == FAIRMARK:
                out[side]["loaded"][label] = loaded(
                    argv[3:], env | sides[side] | {"FAIRMARK_STORE": store(tmp, side)}
                )
    return out


def store(tmp: Path, side: str) -> str:
    """Each side its own store (another fairmark may have another schema)."""
    return f"sqlite:///{tmp / ('this.db' if side == 'this fairmark' else 'against.db')}"


def show(side: str, got: dict[str, Any]) -> None:
    print(f"== {side}")
    print(f"start (median of {STARTS}: wall, CPU):")
    base = got["start"]["python -c pass"][0]
    goals = {"fairmark --version": 0.1, "fairmark runs": 0.15}
    for label, (wall, cpu) in got["start"].items():
        goal = f"; goal < {goals[label]} s, ratio {wall / goals[label]:.2f}" if label in goals else ""
        print(f"  {label:24s} {wall:6.3f} s wall, {cpu:6.3f} s CPU ({wall / base:.1f}× python -c pass{goal})")
    print("heavy libraries loaded:")
    for label, names in got["loaded"].items():
        print(f"  {label:24s} {', '.join(names) or 'none'}")
    for label, kib in got["rss"].items():
        print(
            f"peak RSS of fairmark during a {BIG_RUN}-trial run of `true`, {label}: {kib / 1024:.0f} MB "
            f"(goal ≤ 100 MB, ratio {kib / 1024 / 100:.2f})"
        )


def main() -> None:
    sides: dict[str, dict[str, str]] = {"this fairmark": {}}
    if sys.argv[1:2] == ["--against"] and len(sys.argv) == 3:
        sides[sys.argv[2]] = {"PYTHONPATH": str(Path(sys.argv[2]).resolve())}
    elif sys.argv[1:]:
        sys.exit("usage: start_memory.py [--against OTHER/src]")
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-bench-"))
    env = os.environ | {
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }
    load = [os.getloadavg()[0]]
    try:
        got = measure(tmp, env, sides)
        load.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average (1 min) at start {load[0]:.1f}, at the end {load[1]:.1f}, on {os.cpu_count()} CPUs")
    for side, figures in got.items():
        show(side, figures)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"(this script's own peak RSS: {own / 1024:.0f} MB)")
    print(json.dumps({"figures": got, "load": load}), file=sys.stderr)


if __name__ == "__main__":
    main()
