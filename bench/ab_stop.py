"""What the decision stop saves `fairmark ab` (issue 36): `fairmark ab` over the suite's throwaway repository
(tests/test_ab.py: a C program timing its own sleep, 300 ms here; a head ~10% slower than its base, and a head
that only changes a note), `--fail-on 3%`, once with the run stopped by precision (`stop = "precision"` in the plan's [run], the default
of a plain run) and once by decision (no `stop`: `ab`'s default since issue 36), alternately, each in a store of
its own. Prints, per ab run: its exit (1: the regression gate tripped), its verdict's sentence, wall time and
trials per side (from the store).

Run: .venv/bin/python bench/ab_stop.py [--repeats N] [--no-realtime]"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import _commit  # noqa: E402 - bench/: the commit the figures are of
import test_ab  # noqa: E402 - the suite's own repository
from helpers import NAP_METRIC, realtime_prefix  # noqa: E402

# fairmark's defaults (min_trials 5, max_trials 30, ±1%); the program's sleep timed under SCHED_FIFO or not
PLAN = """title = "ab stop bench"
[run]
warmup = 1
{stop}[[workload]]
name = "prog"
shell = true
command = 'exec {prefix}"$FAIRMARK_CHECKOUT/prog"'
metrics = [{metric}]
"""


def ab(work: Path, repo: Path, base: str, head: str, stop: str, realtime: bool) -> dict:
    plan = work / f"plan-{stop}.toml"
    prefix = realtime_prefix() if realtime else ""
    stop_line = "stop = 'precision'\n" if stop == "precision" else ""
    plan.write_text(PLAN.format(stop=stop_line, prefix=prefix, metric=NAP_METRIC))
    store = work / f"store-{stop}-{time.monotonic_ns()}.db"
    env = {
        **os.environ,
        "FAIRMARK_STORE": f"sqlite:///{store}",
        "FAIRMARK_LOCK_PATH": str(work / "lock"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    argv = [sys.executable, "-m", "fairmark", "ab", "--base", base, "--head", head, "--plan", str(plan)]
    argv += ["--repo", str(repo), "--build", "make", "--accept-risk", "--allow-concurrent"]
    start = time.monotonic()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if res.returncode not in (0, 1):
        raise SystemExit(f"ab ({stop}) exited {res.returncode}: {res.stderr[-2000:]}")
    return {"stop": stop, "wall_s": wall, "exit": res.returncode, **_run(store)}


def _run(store: Path) -> dict:
    """Trials per side, and the verdict's sentence of the run's primary metric, from the store."""
    from fairmark.report.load import load_report
    from fairmark.store.db import Store

    db = Store.open(f"sqlite:///{store}")
    (run,) = db.list_runs()
    report = load_report(db, run["id"])
    per_side = [c.n_ok for c in report.cells]
    sentence = next(v.sentence for v in report.verdicts if v.metric == "elapsed_s")
    return {"trials_per_side": per_side, "sentence": sentence}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-realtime", action="store_true", help="the program's sleep without chrt -f")
    ap.add_argument("--delay-ms", type=int, default=300, help="the base's sleep (test_ab: 100 ms)")
    _commit.add_option(ap)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        test_ab.DELAY_US = args.delay_ms * 1000  # a trial of the program: its sleep
        base, slow, same = test_ab.make_repo(repo)
        for i in range(args.repeats):
            for head, what in ((slow, "head +10%"), (same, "head unchanged")):
                for stop in ("precision", "decision") if i % 2 == 0 else ("decision", "precision"):
                    r = ab(work, repo, base, head, stop, not args.no_realtime) | {"head": what}
                    results.append(r)
                    print(
                        f"{what:14s} {stop:9s} exit {r['exit']}, wall {r['wall_s']:.1f} s, trials per side "
                        f"{r['trials_per_side']}: {r['sentence']}",
                        flush=True,
                    )
    print(
        f"fairmark's defaults (5 to 30 trials, ±1%), the base sleeping {args.delay_ms} ms"
        f"{', without chrt' if args.no_realtime else ''}; commit "
        f"{_commit.commit(args.commit)}, load average {load0:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    for what in ("head +10%", "head unchanged"):
        for stop in ("precision", "decision"):
            mine = [r for r in results if r["stop"] == stop and r["head"] == what]
            walls = [r["wall_s"] for r in mine]
            trials = [n for r in mine for n in r["trials_per_side"]]
            print(
                f"{what}, {stop}: wall {', '.join(f'{w:.1f}' for w in walls)} s (mean {sum(walls) / len(walls):.1f}); "
                f"trials per side {sum(trials) / len(trials):.1f}; exits {[r['exit'] for r in mine]}"
            )


if __name__ == "__main__":
    main()
