"""Does fairmark perturb what it measures? Throughput of iperf3 (loopback) and stress-ng (fork, pipe) run under
`fairmark run` (monitors on, as by default) ÷ the same tool run bare, the same way (the adapter's own command
line through plain subprocess), alternating in one session so that machine drift hits both. Goal ≥ 0.99.

Run: .venv/bin/python bench/perturbation.py [--rounds N]
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

from fairmark.run.workloads import adapter_for
from fairmark.run.workloads.tools import run_once
from fairmark.verdict.compare import compare

CASES = [
    # (tool, params, metric)
    ("iperf3", {"duration_s": 3, "omit_s": 1}, "gbit_s_sent"),
    ("stress-ng", {"stressors": ["fork"], "duration_s": 3}, "bogo_ops_s_real"),
    ("stress-ng", {"stressors": ["pipe"], "duration_s": 3}, "bogo_ops_s_real"),
]
TRIALS = 3


def bare(tool: str, params: dict, metric: str, tmp: Path) -> list[float]:
    out = []
    for i in range(TRIALS):
        work = tmp / f"bare-{tool}-{i}"
        out.append(run_once(adapter_for(tool), params, work, cache=tmp / "cache")[metric])
        shutil.rmtree(work, ignore_errors=True)
    return out


def under_fairmark(tool: str, params: dict, metric: str, tmp: Path, env: dict[str, str]) -> list[float]:
    plan = tmp / "plan.toml"
    plan.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {TRIALS}\nmax_trials = {TRIALS}\n"
        f"[[workload]]\nname = 'w'\ntool = {json.dumps(tool)}\nparams = {_toml(params)}\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--json", "--accept-risk"],
        env=env,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        sys.exit(f"fairmark run failed: {res.stderr[-2000:]}")
    (cell,) = json.loads(res.stdout)["cells"]
    return cell["values"][metric]


def _toml(params: dict) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in params.items()) + " }"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-perturb-"))
    env = os.environ | {
        "FAIRMARK_STORE": f"sqlite:///{tmp / 'p.db'}",
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
    }
    print(
        f"{'workload':32s} {'bare mean':>12s} {'fairmark mean':>14s} {'ratio':>7s}  95% CI of the ratio (Welch)"
    )
    for tool, params, metric in CASES:
        plain, fm = [], []
        for _ in range(args.rounds):  # alternate: drift of the machine hits both sides alike
            plain += bare(tool, params, metric, tmp)
            fm += under_fairmark(tool, params, metric, tmp, env)
        label = f"{tool} {params.get('stressors', [''])[0]} {metric}".replace("  ", " ")
        welch = compare(plain, fm, better="higher").welch
        ratio = statistics.mean(fm) / statistics.mean(plain)
        print(
            f"{label:32s} {statistics.mean(plain):12.4g} {statistics.mean(fm):14.4g} {ratio:7.3f}"
            f"  [{welch['ratio_ci_low']:.3f}, {welch['ratio_ci_high']:.3f}]  n = {len(plain)} + {len(fm)}"
        )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
