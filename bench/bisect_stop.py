"""What the decision stop saves a bisect (issue 36): `fairmark bisect` over the suite's planted-step repository
(tests/test_continual_bisect.py: a C program timing its own sleep, 12 commits, commit 7 ~15% slower), once with
its steps stopped by precision (`stop = "precision"` in the plan's [run], the old default) and once by decision
(no `stop`: a bisect step's default since issue 36), alternately, each in a store of its own. Prints, per
bisect: its answer, wall time, and per step its runs and trials per side (from the store).

Run: .venv/bin/python bench/bisect_stop.py [--repeats N]"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import _commit  # noqa: E402 - bench/: the commit the figures are of
from helpers import realtime_prefix  # noqa: E402
from test_continual_bisect import PLAN, SLOWER_AT, make_repo  # noqa: E402 - the suite's own repository


def plan_text(stop: str, defaults: bool, realtime: bool = True) -> str:
    """The suite's plan (min_trials 6, max_trials 12, target ±2%), or with fairmark's defaults for those (5, 30,
    ±1%); `stop = 'precision'` written in for the precision stop (a bisect's default is the decision stop).
    `realtime` False: the program's sleep not under SCHED_FIFO, so the machine's load reaches the number (a CV of
    several % on a busy machine instead of well under 1%), as most workloads' numbers are reached."""
    text = PLAN.replace("min_trials = 6\nmax_trials = 12\ntarget_ci_pct = 2.0\n", "") if defaults else PLAN
    text = text if realtime else text.replace(realtime_prefix(), "")
    return text.replace("[run]\n", "[run]\nstop = 'precision'\n") if stop == "precision" else text


def bisect(work: Path, repo: Path, stop: str, defaults: bool, realtime: bool) -> dict:
    plan = work / f"plan-{stop}.toml"
    plan.write_text(plan_text(stop, defaults, realtime))
    store = work / f"store-{stop}-{time.monotonic_ns()}.db"
    env = {**os.environ, "FAIRMARK_STORE": f"sqlite:///{store}", "FAIRMARK_LOCK_PATH": str(work / "lock")}
    argv = [sys.executable, "-m", "fairmark", "bisect", "--good", "main~11", "--bad", "main"]
    argv += ["--plan", str(plan), "--repo", str(repo), "--build", "cc -O2 -o prog prog.c"]
    argv += ["--accept-risk", "--allow-concurrent", "--json"]
    start = time.monotonic()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if res.returncode != 0:
        raise SystemExit(f"bisect ({stop}) exited {res.returncode}: {res.stderr[-2000:]}")
    out = json.loads(res.stdout)
    return {"stop": stop, "wall_s": wall, "first_bad": out["first_bad"], "steps": _steps(out, store)}


def _steps(out: dict, store: Path) -> list[dict]:
    from fairmark.store.db import Store

    db = Store.open(f"sqlite:///{store}")
    steps = []
    for step in out["steps"]:
        per_side = [
            sum(1 for t in db.trials(r) if t.measured) // max(1, len(db.cells(r))) for r in step["runs"]
        ]
        steps.append({"answer": step["answer"], "runs": len(step["runs"]), "trials_per_side": per_side})
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--defaults", action="store_true", help="min_trials, max_trials, target: fairmark's defaults"
    )
    ap.add_argument("--no-realtime", action="store_true", help="the program's sleep without chrt -f")
    _commit.add_option(ap)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        shas = make_repo(repo, 1.15)
        for i in range(args.repeats):
            for stop in ("precision", "decision") if i % 2 == 0 else ("decision", "precision"):
                r = bisect(work, repo, stop, args.defaults, not args.no_realtime)
                r["right"] = r["first_bad"] == shas[SLOWER_AT - 1]
                results.append(r)
                trials = [n for s in r["steps"] for n in s["trials_per_side"]]
                print(
                    f"{stop:9s} wall {r['wall_s']:.1f} s, first bad {'commit 7' if r['right'] else r['first_bad']}, "
                    f"steps {[(s['answer'], s['trials_per_side']) for s in r['steps']]}, "
                    f"trials per side per run: mean {sum(trials) / len(trials):.1f}",
                    flush=True,
                )
    which = "fairmark's defaults (5, 30, ±1%)" if args.defaults else "the suite's plan (6, 12, ±2%)"
    which += ", without chrt" if args.no_realtime else ""
    print(
        f"{which}; commit {_commit.commit(args.commit)}, load average {load0:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    for stop in ("precision", "decision"):
        mine = [r for r in results if r["stop"] == stop]
        trials = [n for r in mine for s in r["steps"] for n in s["trials_per_side"]]
        walls = [r["wall_s"] for r in mine]
        print(
            f"{stop}: wall {', '.join(f'{w:.1f}' for w in walls)} s (mean {sum(walls) / len(walls):.1f}); "
            f"trials per side per step run {sum(trials) / len(trials):.2f}; right answer {sum(r['right'] for r in mine)}/{len(mine)}"
        )


if __name__ == "__main__":
    main()
