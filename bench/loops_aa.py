"""`loops = "auto"` on an A/A pair (issue 34 item 14): two identical cells of a Python loop (`os.getpid()` N
times), run K times by this tree's fairmark and by another's, alternately. Per run: each cell's loop count and
the ratio of the two cells' mean CPU time per loop (1.000 is the truth: the cells are the same command). Before
item 14 each cell was calibrated on its own (different counts, each kept the last step's overshoot) and the
start's share of the per-loop value differed with the count; now one calibration per group gives both cells one
count, and the calibrated start is taken off the CPU time.

Run: .venv/bin/python bench/loops_aa.py [--against OTHER/src] [--runs 3]
     (OTHER/src e.g. a `git archive` of an older commit's src; each run a store of its own)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BODY = "import os\nfor _ in range(int(os.environ['FAIRMARK_LOOPS'])): os.getpid()"
PLAN = (
    "[run]\nwarmup = 1\nmin_trials = 10\nmax_trials = 12\ntarget_ci_pct = 0.5\n"
    '[[workload]]\nname = "getpid"\nloops = "auto"\n'
    f"command = {json.dumps(['python3', '-S', '-c', BODY])}\n"
    '[[workload.metrics]]\nname = "cpu_s_per_loop"\n'
    '[[variant]]\nname = "a1"\n[[variant]]\nname = "a2"\n'
)


def one_run(src: str, tmp: Path, k: int) -> dict[str, object]:
    plan = tmp / "aa.toml"
    plan.write_text(PLAN)
    env = os.environ | {"PYTHONPATH": src, "FAIRMARK_STORE": f"sqlite:///{tmp / f's{k}.db'}"}
    argv = [sys.executable, "-m", "fairmark", "run", str(plan), "--json", "--accept-risk", "--no-monitors"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    doc = json.loads(done.stdout)
    (v,) = [v for v in doc["verdicts"] if v["metric"] == "cpu_s_per_loop"]
    return {
        "loops": {c["variant"]: c["loops"] for c in doc["cells"]},
        "ratio": v["mean_other"] / v["mean_baseline"],
        "per_loop_ns": 1e9 * v["mean_baseline"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", help="another tree's src directory")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    trees = {"this": str(Path(__file__).resolve().parent.parent / "src")}
    if args.against:
        trees["other"] = args.against
    with tempfile.TemporaryDirectory() as d:
        results: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
        for k in range(args.runs):
            for name, src in trees.items():
                r = one_run(src, Path(d), len(results[name]) * 10 + k + (100 if name == "other" else 0))
                results[name].append(r)
                print(
                    f"{name:5} run {k + 1}: loops {r['loops']}, a2/a1 {r['ratio']:.4f}, a1 {r['per_loop_ns']:.1f} ns/loop"
                )
        for name, rs in results.items():
            worst = max(abs(float(r["ratio"]) - 1) for r in rs)  # type: ignore[arg-type]
            same = sum(len(set(r["loops"].values())) == 1 for r in rs)  # type: ignore[union-attr]
            print(
                f"{name}: worst |a2/a1 - 1| {100 * worst:.2f}% over {len(rs)} runs; one count in {same} of {len(rs)}"
            )


if __name__ == "__main__":
    main()
