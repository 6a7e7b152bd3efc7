"""What the 1 Hz system monitor costs: CPU per sample, and the throughput of a CPU-bound command with ÷
without the monitor, alternating so drift hits both sides alike.

Goal (issue 5): < 1% of one CPU at 1 Hz, throughput ratio ≥ 0.99.

    .venv/bin/python bench/monitor_overhead.py [--pairs 8] [--work 20000000] [--interval 1.0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

from fairmark.run.hooks import HookContext
from fairmark.run.monitors import SystemMonitor
from fairmark.run.monitors.sampler import reader_for
from fairmark.stats import describe


def cpu_per_sample_ms(n: int = 300) -> float:
    reader = reader_for()
    reader.snapshot()
    t0 = time.process_time()
    for _ in range(n):
        reader.snapshot()
    return 1000 * (time.process_time() - t0) / n


def per_trial_us(n: int = 1000) -> tuple[float, float]:
    """CPU (µs) of the monitor's work for one trial of nothing — its start and end snapshots and the series — and
    of the run's secret scrubber walking that series, which a run no longer does (issue 34 item 15: the series
    holds numbers under fairmark's names, run/hooks.Artifact.numbers_only). Interleaved, in one process."""
    from fairmark.run.trials.secrets import Scrubber

    scrub = Scrubber()
    monitor = SystemMonitor(3600.0)
    ctx = HookContext("bench", "cell", "w", "A", "t", "/tmp", False)
    hook_s = scrub_s = 0.0
    for _ in range(n):
        t0 = time.process_time()
        monitor.start(ctx)
        (art,) = monitor.stop(ctx, None)
        t1 = time.process_time()
        scrub.json(art.data)
        hook_s, scrub_s = hook_s + t1 - t0, scrub_s + time.process_time() - t1
    monitor.close()
    return 1e6 * hook_s / n, 1e6 * scrub_s / n


def one_trial(work: int, monitor: SystemMonitor | None, ctx: HookContext) -> float:
    """Throughput of a CPU-bound child (iterations per second of wall time)."""
    argv = [sys.executable, "-c", f"sum(i * i for i in range({work}))"]
    if monitor:
        monitor.start(ctx)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True)
    wall = time.perf_counter() - t0
    if monitor:
        monitor.stop(ctx, None)
    return work / wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--work", type=int, default=20_000_000)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    per_sample = cpu_per_sample_ms()
    share = per_sample / (1000 * args.interval) * 100
    print(
        f"one sample costs {per_sample:.3f} ms of CPU → {share:.4f}% of one CPU at {1 / args.interval:g} Hz"
    )
    hook_us, scrub_us = per_trial_us()
    print(
        f"a trial's monitor work (2 snapshots + its series) {hook_us:.0f} µs of CPU; scrubbing that series "
        f"for secrets, which a run no longer does, {scrub_us:.0f} µs more"
    )
    monitor = SystemMonitor(args.interval)
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        ctx = HookContext("bench", "cell", "spin", "A", "t", tmp, False)
        for k in range(args.pairs):
            order = (monitor, None) if k % 2 else (None, monitor)  # ABBA: alternate who goes first
            rates = {id(m): one_trial(args.work, m, ctx) for m in order}
            ratios.append(rates[id(monitor)] / rates[id(None)])
    s = describe(ratios)
    print(f"throughput with ÷ without monitor: {s.mean:.4f} ± {s.ci_half_width:.4f} (95% CI, {s.n} pairs)")
    ok = share < 1.0 and s.mean + s.ci_half_width >= 0.99
    print("PASS" if ok else "FAIL (a noisy machine widens the CI; the per-sample cost is the precise figure)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
