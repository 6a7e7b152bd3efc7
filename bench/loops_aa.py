"""`loops = "auto"` on an A/A pair (issue 34 item 14): two identical cells of a Python loop (`os.getpid()` N
times), run K times (by this tree's fairmark and, with --against, another's, alternately). Per run: the loop
count of each cell, the verdict's ratio of the two cells' CPU time per loop (1.000 is the truth: the cells are the
same command), and where what is left of a difference comes from:

- bias or noise: the trials' spread (CV of the CPU time per loop), the spread of the round's pair (a2 − a1 of
  one round, relative), and the effect of the position in the round (the second trial of a round against the
  first, whichever cell): a harness that favoured a cell, or a position, would show a ratio away from 1 that the
  spread does not explain;
- what ±1% needs here: the rounds for a 95% interval of ±1% on the paired difference, (1.96 · sd / 1%)².

Run: .venv/bin/python bench/loops_aa.py [--rounds 40] [--runs 3] [--against OTHER/src]
     (each run a store of its own; docs/statistics.md quotes its output)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BODY = "import os\nfor _ in range(int(os.environ['FAIRMARK_LOOPS'])): os.getpid()"


def plan(rounds: int) -> str:
    return (
        f"[run]\nwarmup = 1\nmin_trials = {rounds}\nmax_trials = {rounds}\ntarget_ci_pct = 0.0001\n"
        '[[workload]]\nname = "getpid"\nloops = "auto"\n'
        f"command = {json.dumps(['python3', '-S', '-c', BODY])}\n"
        '[[workload.metrics]]\nname = "cpu_s_per_loop"\n'
        '[[variant]]\nname = "a1"\n[[variant]]\nname = "a2"\n'
    )


def one_run(src: str, tmp: Path, k: int, rounds: int) -> dict[str, object]:
    p = tmp / "aa.toml"
    p.write_text(plan(rounds))
    env = os.environ | {"PYTHONPATH": src, "FAIRMARK_STORE": f"sqlite:///{tmp / f's{k}.db'}"}
    argv = [sys.executable, "-m", "fairmark", "run", str(p), "--json", "--accept-risk", "--no-monitors"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:  # the run's own words, not only its exit status (a 1000-round run is an hour)
        sys.exit(f"fairmark run exited {done.returncode}:\n{done.stderr[-4000:]}")
    doc = json.loads(done.stdout)
    (v,) = [v for v in doc["verdicts"] if v["metric"] == "cpu_s_per_loop"]
    by_round: dict[int, list[tuple[int, str, float]]] = {}
    for c in doc["cells"]:
        for t in c["trials"]:
            if not t["warmup"] and t["status"] == "ok":
                by_round.setdefault(t["round"], []).append(
                    (t["seq"], c["variant"], t["samples"]["cpu_s_per_loop"])
                )
    pairs = [sorted(r) for r in by_round.values() if len(r) == 2]
    values = [x for r in pairs for _, _, x in r]
    by_cell = [{c: x for _, c, x in r} for r in pairs]
    diffs = [d["a2"] / d["a1"] - 1 for d in by_cell]
    second = [r[1][2] / r[0][2] - 1 for r in pairs]
    sd = statistics.stdev(diffs)
    return {
        "loops": {c["variant"]: c["loops"] for c in doc["cells"]},
        "ratio": v["mean_other"] / v["mean_baseline"],
        "significant": v["significant"],
        "cv": statistics.stdev(values) / statistics.mean(values),
        "pair_sd": sd,
        "second_vs_first": statistics.mean(second),
        "second_se": statistics.stdev(second) / math.sqrt(len(second)),
        "rounds_for_1pct": math.ceil((1.96 * sd / 0.01) ** 2),
        "load": os.getloadavg()[0],
    }


def line(name: str, k: int, r: dict[str, object]) -> str:
    return (
        f"{name:5} run {k + 1}: loops {r['loops']}, a2/a1 {r['ratio']:.4f} (significant: {r['significant']}), "
        f"CV {100 * float(r['cv']):.1f}%, pair sd {100 * float(r['pair_sd']):.1f}%, second/first "
        f"{100 * float(r['second_vs_first']):+.2f}% ± {100 * float(r['second_se']):.2f}% (se), rounds for ±1% "
        f"{r['rounds_for_1pct']}, load {float(r['load']):.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", help="another tree's src directory")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    trees = {"this": str(Path(__file__).resolve().parent.parent / "src")}
    if args.against:
        trees["other"] = args.against
    print(
        f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.rounds} rounds a run"
    )
    with tempfile.TemporaryDirectory() as d:
        results: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
        for k in range(args.runs):
            for name, src in trees.items():
                r = one_run(
                    src, Path(d), len(results[name]) * 10 + k + (100 if name == "other" else 0), args.rounds
                )
                results[name].append(r)
                print(line(name, k, r), flush=True)
        for name, rs in results.items():
            worst = max(abs(float(r["ratio"]) - 1) for r in rs)  # type: ignore[arg-type]
            same = sum(len(set(r["loops"].values())) == 1 for r in rs)  # type: ignore[union-attr]
            pos = statistics.mean(float(r["second_vs_first"]) for r in rs)  # type: ignore[arg-type]
            need = statistics.median(int(r["rounds_for_1pct"]) for r in rs)  # type: ignore[call-overload]
            print(
                f"{name}: worst |a2/a1 - 1| {100 * worst:.2f}% over {len(rs)} runs; one count in {same} of "
                f"{len(rs)}; position effect (mean of runs) {100 * pos:+.2f}%; rounds for ±1%, median {need:.0f}"
            )


if __name__ == "__main__":
    main()
