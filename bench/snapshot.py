"""Measure how long the environment snapshot takes on this machine (goal: < 2 s), and its parts.

Usage: .venv/bin/python bench/snapshot.py [REPEATS]
Prints the median and worst wall time of take_snapshot() with the tools a typical plan uses, of
volatile_snapshot(), and of a sysroot snapshot (pure parsing, no sampling, no commands).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from fairmark.probe.doctor import diagnose
from fairmark.probe.snapshot import SAMPLE_S, take_snapshot, volatile_snapshot

TOOLS = [
    "iperf3",
    "zstd",
    "fio",
    "pgbench",
    "sysbench",
    "redis-benchmark",
    "stress-ng",
    "openssl",
    "hyperfine",
]
SYSROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sysroots" / "linux-debian12-vm"


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def report(name: str, times: list[float], goal_s: float | None = None) -> None:
    med, worst = statistics.median(times), max(times)
    verdict = (
        "" if goal_s is None else ("  within goal" if worst < goal_s else f"  OVER the {goal_s:g} s goal")
    )
    print(f"{name:<40} median {med:6.3f} s   worst {worst:6.3f} s   (n={len(times)}){verdict}")


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    full = timed(lambda: diagnose(take_snapshot("/", tools=TOOLS)), repeats)
    report(f"take_snapshot + diagnose ({len(TOOLS)} tools)", full, goal_s=2.0)
    print(f"{'':<40} of which the load/steal sample sleeps {SAMPLE_S:g} s")
    report("volatile_snapshot (0.2 s sample)", timed(volatile_snapshot, repeats))
    report("sysroot snapshot (parsing only)", timed(lambda: take_snapshot(str(SYSROOT)), repeats))
    print(
        f"ratio full/sysroot-parse: {statistics.median(full) / statistics.median(timed(lambda: take_snapshot(str(SYSROOT)), repeats)):.1f}x"
    )


if __name__ == "__main__":
    main()
