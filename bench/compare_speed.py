"""`fairmark compare` of two files of 100 000 lines against the installed `ministat` (issue 23 item 10): wall time
and peak RSS of each process, alternating in one run (median of 5), beside `fairmark --version` (the interpreter
and click alone: the floor any fairmark command pays). Run: .venv/bin/python bench/compare_speed.py [--lines N]"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FAIRMARK = [sys.executable, "-m", "fairmark"]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        files = []
        for k, mean in enumerate((100.0, 100.1)):
            path = Path(d) / f"f{k}"
            path.write_text("".join(f"{float(v)!r}\n" for v in rng.normal(mean, 2, args.lines)))
            files.append(str(path))
        commands = {
            "fairmark --version": [*FAIRMARK, "--version"],
            "fairmark compare": [*FAIRMARK, "compare", *files],
            "fairmark compare --ministat-compat": [*FAIRMARK, "compare", "--ministat-compat", *files],
        }
        if shutil.which("ministat"):
            commands["ministat"] = ["ministat", *files]
        walls: dict[str, list[float]] = {k: [] for k in commands}
        rss: dict[str, float] = {}
        load0 = os.getloadavg()[0]
        for _ in range(args.repeats):
            for name, argv in commands.items():
                walls[name].append(timed(argv))
        for name, argv in commands.items():
            rss[name] = peak_rss(argv)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"commit {commit}, {args.lines} lines per file, load average {load0:.1f} → {os.getloadavg()[0]:.1f}"
    )
    for name in commands:
        print(
            f"  {name:<36} median {statistics.median(walls[name]):.3f} s of {args.repeats} "
            f"({', '.join(f'{w:.2f}' for w in walls[name])}), peak RSS {rss[name]:.0f} MB"
        )


def peak_rss(argv: list[str]) -> float:
    """Peak RSS of one run of `argv` in MB, from GNU time (resource's child maximum spans all children)."""
    out = (
        subprocess.run(
            ["/usr/bin/time", "-f", "%M", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
        .stderr.strip()
        .splitlines()[-1]
    )
    return int(out) / 1024


if __name__ == "__main__":
    main()
