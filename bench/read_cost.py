"""CPU and peak RSS of the commands that read a store (issue 34 item 15): `fairmark history` of 200 runs (300 000
samples) and `fairmark show` of a 300-trial run, as a user starts them (a new process, imports included).

The history store: 200 runs (one a CI commit, tagged branch=main) of one workload × 2 variants × 150 trials × 5
metrics, written by bench/history_query.py's `fill` (a +10% step half way: one change point per series to size)
through each side's own fairmark, as its runs' ends write it (a store of the schema that fairmark reads).
The run: 2 variants × 150 trials of `true`, monitors on, made by each side's `fairmark run`. Each command is started
REPS times, alternating with the fairmark of `--against OTHER/src` when given, as the `fairmark` script starts it
(numpy's OpenBLAS on one thread where that fairmark does so); CPU (user + sys) from wait4, peak RSS from
/usr/bin/time (see `started`), medians printed (with `--against`, the ratio of the two trees' medians), and
whether scipy was loaded (a probe of sys.modules after the command). On this shared VM CPU time is what compares across loads; the load average is printed at the start and
the end. As a user's install has them, the modules' compiled bytecode is cached: PYTHONDONTWRITEBYTECODE is
dropped for the commands, and each command is started once, unmeasured, before the measured starts (a tree without
its __pycache__ compiled fairmark's ~100 modules at every start: +0.3–0.5 s of CPU that no user pays).

    .venv/bin/python bench/read_cost.py [--reps 7] [--against OTHER/src]
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

BENCH = Path(__file__).resolve().parent
# A side's history store, written by that side's fairmark (a store of the schema it reads: schema 12 sums an
# ended run's cells, which an older fairmark refuses to open) with bench/history_query.py's fill
FILL = (
    "import sys\nsys.path.insert(0, sys.argv[2])\nfrom fairmark.store.db import Store\n"
    "from history_query import fill\nprint(fill(Store.open(sys.argv[1]), 200, 1, 150))\n"
)
# As the `fairmark` script starts (cli.main.entry): numpy's OpenBLAS on one thread where this fairmark does that
PROBE = (
    "import json, sys\ntry:\n    from fairmark.cli import _threads\n    _threads.install()\n"
    "except ImportError:\n    pass\nfrom fairmark.cli.main import main\ncode = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'scipy': 'scipy' in sys.modules}), file=sys.stderr)\n"
)
PLAN = (
    "[run]\nwarmup = 0\nmin_trials = 150\nmax_trials = 150\ntarget_ci_pct = 0.0001\n"
    "[[workload]]\nname = 'w'\ncommand = ['true']\n[[variant]]\nname = 'a'\n[[variant]]\nname = 'b'\n"
)


def started(argv: list[str], env: dict[str, str]) -> tuple[float, int, bool]:
    """CPU seconds, peak RSS (KiB) and whether scipy was loaded, of one command that must succeed. The peak is
    /usr/bin/time's (%M): a child of this process inherits its high-water RSS through fork — or vfork, which
    subprocess uses — and keeps it across exec, so wait4 gave this bench's own 65 MB for every command; the
    command started by /usr/bin/time (2 MB) is measured alone. CPU is wait4's (the command and time's ~1 ms)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            ["/usr/bin/time", "-f", "maxrss-kib %M", sys.executable, "-c", PROBE, *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, ru = os.wait4(proc.pid, 0)
        err.seek(0)
        text = err.read().decode(errors="replace")
    lines = text.strip().splitlines()
    last = json.loads(lines[-2]) if len(lines) > 1 and lines[-1].startswith("maxrss-kib ") else {"code": -1}
    if os.waitstatus_to_exitcode(status) != 0 or last["code"] != 0:
        sys.exit(f"{' '.join(argv)} failed: {text[-2000:]}")
    return ru.ru_utime + ru.ru_stime, int(lines[-1].split()[1]), bool(last["scipy"])


def stores(tmp: Path, env: dict[str, str]) -> tuple[str, str, int]:
    """A side's history store (its number of samples) and its run of `true`, each made by that side's fairmark."""
    tmp.mkdir()
    hist, runs = f"sqlite:///{tmp / 'history.db'}", f"sqlite:///{tmp / 'run.db'}"
    out = subprocess.run(
        [sys.executable, "-c", FILL, hist, str(BENCH)], env=env, check=True, capture_output=True, text=True
    )
    (tmp / "p.toml").write_text(PLAN)
    subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(tmp / "p.toml"), "--json"],
        env=env | {"FAIRMARK_STORE": runs},
        check=True,
        capture_output=True,
    )
    return hist, runs, int(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--against", metavar="OTHER/src")
    args = ap.parse_args()
    sides = {"this fairmark": {}}
    if args.against:
        sides[args.against] = {"PYTHONPATH": str(Path(args.against).resolve())}
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-bench-read-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }
    load = [os.getloadavg()[0]]
    try:
        urls = {side: stores(tmp / f"side{i}", env | senv) for i, (side, senv) in enumerate(sides.items())}
        n = urls["this fairmark"][2]
        cmds = {
            f"history w0:wall_s --tag branch=main ({n:,} samples, 200 runs)": (
                ["history", "w0:wall_s", "--tag", "branch=main"],
                0,
            ),
            "show last (2 × 150 trials of `true`, monitors on)": (["show", "last"], 1),
        }
        got: dict[tuple[str, str], list[tuple[float, int, bool]]] = {}
        for argv, which in cmds.values():  # unmeasured: writes each side's __pycache__
            for side, senv in sides.items():
                started(argv, env | senv | {"FAIRMARK_STORE": urls[side][which]})
        for label, (argv, which) in cmds.items():
            for _ in range(args.reps):
                for side, senv in sides.items():
                    got.setdefault((label, side), []).append(
                        started(argv, env | senv | {"FAIRMARK_STORE": urls[side][which]})
                    )
        load.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average (1 min) at start {load[0]:.1f}, at the end {load[1]:.1f}, on {os.cpu_count()} CPUs")
    for (label, side), rows in got.items():
        cpu, rss = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(
            f"{side}: fairmark {label}: {cpu:.3f} s CPU, peak RSS {rss / 1024:.0f} MB "
            f"(median of {len(rows)}), scipy loaded: {'yes' if rows[0][2] else 'no'}"
        )
    # the claim that survives this VM's ±20% between sittings: one tree's CPU over the other's, in one sitting
    if args.against:
        for label in cmds:
            mine = statistics.median(r[0] for r in got[(label, "this fairmark")])
            other = statistics.median(r[0] for r in got[(label, args.against)])
            print(f"fairmark {label}: CPU ratio this / {args.against} = {mine / other:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
