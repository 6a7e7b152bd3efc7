"""Monitors: background samplers during trials (vmstat-like). `default_hooks` is what `fairmark run` turns on.

Artifact kind "monitor", name "system": a JSON series (see base.build_series) with per-interval CPU shares
(total and per CPU), rates (context switches, interrupts, forks, faults, swap, disk, network, pressure stall)
and gauges (run queue, free/cached memory), plus whole-trial totals.
"""

from __future__ import annotations

from fairmark.run.hooks import TrialHook
from fairmark.run.monitors.sampler import SystemMonitor


def default_hooks(interval_s: float = 1.0) -> list[TrialHook]:
    return [SystemMonitor(interval_s)]


__all__ = ["SystemMonitor", "default_hooks"]
