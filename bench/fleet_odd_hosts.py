"""The fleet view's statistic (stats/fleet.py), simulated: how often an A/A fleet (hosts alike up to their
legitimate spread) names a host, how often a +50% host is found, and whether another host is named with it.

    .venv/bin/python bench/fleet_odd_hosts.py [--reps 1000]

Each host: 5 trials, lognormal with trial noise `sigma`; host offsets normal with sd `tau` (hosts of a fleet
legitimately differ a little); the planted host's values ×1.5."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from fairmark.stats.fleet import odd_hosts


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(
        "| hosts | host sd | trial sd | A/A: any host named | +50% host found | another host named with it |"
    )
    print("|---|---|---|---|---|---|")
    for k in (3, 4, 5, 8, 20):
        for tau in (0.0, 0.02, 0.1):
            for sigma in (0.01, 0.05):
                aa = found = other = 0
                for _ in range(args.reps):
                    off = rng.normal(0, tau, k)
                    vals = {f"h{i}": list(100 * np.exp(rng.normal(off[i], sigma, 5))) for i in range(k)}
                    aa += any(h.odd for h in odd_hosts(vals))
                    vals["h0"] = [v * 1.5 for v in vals["h0"]]
                    res = odd_hosts(vals)
                    found += any(h.odd and h.host == "h0" for h in res)
                    other += any(h.odd and h.host != "h0" for h in res)
                n = args.reps
                print(f"| {k} | {tau:.0%} | {sigma:.0%} | {aa / n:.1%} | {found / n:.1%} | {other / n:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
